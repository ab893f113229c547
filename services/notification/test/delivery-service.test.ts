import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { catalogueEvents, notificationRpc } from "@cheese/contracts";
import { createSqliteEventStore } from "@cheese/event-store";
import {
  callRpc,
  createInProcessBroker,
  type InProcessBroker,
  publishEvent,
  type RpcDefinition,
} from "@cheese/messaging";
import { createLogger, type RunningService } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { LEGACY_WEBHOOK_CONSUMER, webhookConsumer } from "../src/handlers/integration-events.ts";
import { start } from "../src/main.ts";

/**
 * The notification service as it runs, over an in-process bus and its SQLite event store: what an
 * integrator would see at the receiver, and in GET /webhooks/{id}/deliveries.
 */
describe("webhook delivery by the notification service", () => {
  let broker: InProcessBroker;
  let data: ReturnType<typeof tempDir>;
  let receiver: Receiver;
  const running: RunningService[] = [];

  beforeEach(async () => {
    broker = createInProcessBroker();
    data = tempDir("notification");
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    for (const service of running.splice(0)) await service.stop();
    await receiver.close();
    data.remove();
  });

  const startReplica = async (env: Record<string, string> = {}) => {
    const service = await start({
      env: {
        DATA_DIR: data.path,
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,150ms,150ms",
        WEBHOOK_TIMEOUT: "1s",
        ...env,
      },
      bus: broker.connect("notification"),
      logger: createLogger("notification", "silent"),
    });
    running.push(service);
    return service;
  };
  const bus = () => broker.connect("test");
  const rpc = <Req extends z.ZodType, Res extends z.ZodType>(
    definition: RpcDefinition<Req, Res>,
    payload: z.input<Req>,
  ) => callRpc(bus(), definition, payload, { timeoutMs: 5000 });
  const register = (path: string, events: z.input<typeof notificationRpc.createWebhook.request>["events"]) =>
    rpc(notificationRpc.createWebhook, { url: receiver.url(path), events, description: null });
  const deliveries = async (webhookId: number) =>
    (await rpc(notificationRpc.listDeliveries, { webhookId, limit: 100 })).items;

  const cheese = (id: number) => ({ id, name: `Cheese ${id}`, status: "available" as const, organic: false });

  it("sends an integration event to the registrations that want its kind, signed, once each", async () => {
    await startReplica();
    const wanted = await register("/arrivals", ["cheese.new_arrival"]);
    const other = await register("/orders", ["order.placed"]);
    await publishEvent(bus(), catalogueEvents.cheeseAdded, {
      id: randomUUID(),
      payload: { cheese: cheese(5) },
    });

    const [request] = await receiver.waitFor("/arrivals", 1);
    const envelope = verifyWebhook(wanted.secret, request!.rawBody, request!.headers);
    expect(envelope).toMatchObject({
      type: "cheese.new_arrival",
      data: { cheese_id: "5", name: "Cheese 5" },
    });
    expect(Date.parse(envelope.created_at)).not.toBeNaN();
    await expect.poll(async () => (await deliveries(wanted.id))[0]?.status).toBe("delivered");
    // The fan-out planned every delivery of the event before the first went out: none for /orders.
    expect(await deliveries(other.id)).toEqual([]);
    // Stopped, the service sends nothing more: what the receiver has is all it will ever get.
    for (const service of running.splice(0)) await service.stop();
    expect(receiver.requests("/arrivals")).toHaveLength(1);
    expect(receiver.requests("/orders")).toHaveLength(0);
  });

  it("takes over from the single durable of every event of earlier versions: what it had not acknowledged arrives, once", async () => {
    await startReplica();
    const hook = await register("/arrivals", ["cheese.new_arrival"]);
    for (const service of running.splice(0)) await service.stop();
    // What an earlier version leaves: its one durable of every event, which had taken cheese 1,
    // and no durable per source.
    const old = bus();
    const taken: string[] = [];
    const legacy = old.consume({
      durable: LEGACY_WEBHOOK_CONSUMER,
      subjects: ["events.>"],
      startAt: "new",
      handler: async (event) => void taken.push(event.id),
    });
    await publishEvent(old, catalogueEvents.cheeseAdded, {
      id: randomUUID(),
      payload: { cheese: cheese(1) },
    });
    await expect.poll(() => taken.length).toBe(1);
    await legacy.close();
    expect(await old.deleteDurable(webhookConsumer("catalogue"))).toBe(true);
    for (const id of [2, 3])
      await publishEvent(old, catalogueEvents.cheeseAdded, {
        id: randomUUID(),
        payload: { cheese: cheese(id) },
      });

    await startReplica();
    await receiver.waitFor("/arrivals", 2);
    await expect
      .poll(async () => (await deliveries(hook.id)).map((d: { status: string }) => d.status))
      .toEqual(["delivered", "delivered"]);
    const names = receiver
      .requests("/arrivals")
      .map((r) => verifyWebhook(hook.secret, r.rawBody, r.headers).data.name)
      .sort();
    expect(names).toEqual(["Cheese 2", "Cheese 3"]);
    expect(await old.deleteDurable(LEGACY_WEBHOOK_CONSUMER)).toBe(false);
  });

  it("takes a source's events from the stream's start when its durable is gone and registrations for it are recorded (the bus lost its state)", async () => {
    await startReplica();
    const hook = await register("/arrivals", ["cheese.new_arrival"]);
    for (const service of running.splice(0)) await service.stop();
    const other = bus();
    // The bus lost the durable (a restore brings the stores back, not NATS); the catalogue's
    // relay publishes its events again before notification is back.
    expect(await other.deleteDurable(webhookConsumer("catalogue"))).toBe(true);
    await publishEvent(other, catalogueEvents.cheeseAdded, {
      id: randomUUID(),
      payload: { cheese: cheese(7) },
    });

    await startReplica();
    const [request] = await receiver.waitFor("/arrivals", 1);
    expect(verifyWebhook(hook.secret, request!.rawBody, request!.headers).data.name).toBe("Cheese 7");
    await expect
      .poll(async () => (await deliveries(hook.id)).map((d: { status: string }) => d.status))
      .toEqual(["delivered"]);
  });

  it("fans out events concurrently, each once, with created_at their publish time, so sorting by it restores publish order", async () => {
    await startReplica();
    const hook = await register("/arrivals", ["cheese.new_arrival"]);
    const publisher = bus();
    const published: { cheeseId: string; before: number; after: number }[] = [];
    for (let n = 1; n <= 30; n++) {
      const before = Date.now();
      await publishEvent(publisher, catalogueEvents.cheeseAdded, {
        id: randomUUID(),
        payload: { cheese: cheese(n) },
      });
      published.push({ cheeseId: String(n), before, after: Date.now() });
    }

    const requests = await receiver.waitFor("/arrivals", 30);
    const envelopes = requests.map((r) => verifyWebhook(hook.secret, r.rawBody, r.headers));
    const byCheese = new Map(envelopes.map((e) => [String(e.data.cheese_id), e]));
    expect(byCheese.size).toBe(30);
    const createdAt = published.map(({ cheeseId, before, after }) => {
      const at = Date.parse(byCheese.get(cheeseId)!.created_at);
      expect(at).toBeGreaterThanOrEqual(before - 1);
      expect(at).toBeLessThanOrEqual(after + 1);
      return at;
    });
    expect([...createdAt].sort((a, b) => a - b)).toEqual(createdAt);
    await expect.poll(async () => (await deliveries(hook.id)).length).toBe(30);
    expect(receiver.requests("/arrivals")).toHaveLength(30);
  });

  it("sees registrations made, changed and deleted between two events of a kind", async () => {
    await startReplica();
    const first = await register("/first", ["cheese.new_arrival"]);
    const arrival = (n: number) =>
      publishEvent(bus(), catalogueEvents.cheeseAdded, { id: randomUUID(), payload: { cheese: cheese(n) } });
    await arrival(1);
    await receiver.waitFor("/first", 1);
    // A second registration, made just before the next event, gets it.
    await register("/second", ["cheese.new_arrival"]);
    await arrival(2);
    await receiver.waitFor("/second", 1);
    await receiver.waitFor("/first", 2);
    // The first one stops wanting the kind, and the second is deleted: neither gets the third.
    await rpc(notificationRpc.updateWebhook, { webhookId: first.id, events: ["order.placed"] });
    const second = (await rpc(notificationRpc.listWebhooks, { limit: 10 })).items.find((w) =>
      w.url.endsWith("/second"),
    )!;
    await rpc(notificationRpc.deleteWebhook, { webhookId: second.id });
    const third = await register("/third", ["cheese.new_arrival"]);
    await arrival(3);
    await receiver.waitFor("/third", 1);
    await expect.poll(async () => (await deliveries(third.id))[0]?.status).toBe("delivered");
    expect(receiver.requests("/first")).toHaveLength(2);
    expect(receiver.requests("/second")).toHaveLength(1);
  });

  it("retries on the configured delays, dead-letters after the last attempt, and replays with the same event id", async () => {
    await startReplica();
    receiver.behave("/failing", { status: 503 });
    const hook = await register("/failing", ["webhook.test"]);
    const { deliveryId } = await rpc(notificationRpc.sendTestEvent, { webhookId: hook.id });

    const attempts = await receiver.waitFor("/failing", 3);
    await expect.poll(async () => (await deliveries(hook.id))[0]?.status).toBe("dead_lettered");
    expect(new Set(attempts.map((r) => r.headers["webhook-id"])).size).toBe(1);
    for (let i = 1; i < attempts.length; i++) {
      expect(attempts[i]!.receivedAt - attempts[i - 1]!.receivedAt).toBeGreaterThanOrEqual(140);
    }
    const [dead] = await deliveries(hook.id);
    expect(dead).toMatchObject({
      id: deliveryId,
      status: "dead_lettered",
      deadLettered: true,
      nextAttemptAt: null,
    });
    expect(dead!.attempts.map((a) => [a.attempt, a.outcome, a.statusCode])).toEqual([
      [1, "failed", 503],
      [2, "failed", 503],
      [3, "failed", 503],
    ]);

    receiver.behave("/failing", { status: 200 });
    expect(await rpc(notificationRpc.replayDeliveries, { webhookId: hook.id })).toEqual({ replayed: 1 });
    const [, , , replayed] = await receiver.waitFor("/failing", 4);
    expect(envelopeOf(replayed!).id).toBe(envelopeOf(attempts[0]!).id);
    expect(replayed!.body).toBe(attempts[0]!.body);
    expect(verifyWebhook(hook.secret, replayed!.rawBody, replayed!.headers).id).toBe(
      replayed!.headers["webhook-id"],
    );
    await expect.poll(async () => (await deliveries(hook.id))[0]?.status).toBe("delivered");
    const [done] = await deliveries(hook.id);
    expect(done!.attempts.at(-1)).toMatchObject({
      round: 1,
      attempt: 1,
      outcome: "succeeded",
      statusCode: 200,
    });
    expect(await rpc(notificationRpc.replayDeliveries, { webhookId: hook.id })).toEqual({ replayed: 0 });
  });

  it("makes each attempt once with two replicas sharing the store", async () => {
    await startReplica({ WEBHOOK_RETRY_DELAYS: "0,50ms,50ms,50ms,50ms,50ms" });
    await startReplica({ WEBHOOK_RETRY_DELAYS: "0,50ms,50ms,50ms,50ms,50ms" });
    receiver.behave("/shared", { status: 500 });
    const hook = await register("/shared", ["webhook.test", "cheese.new_arrival"]);
    // Test events (first attempts claimed by a scheduler) and integration events (claimed by the
    // fan-out that creates them, in the same append), all retried by either replica.
    for (let i = 0; i < 2; i++) await rpc(notificationRpc.sendTestEvent, { webhookId: hook.id });
    for (const id of [5, 6])
      await publishEvent(bus(), catalogueEvents.cheeseAdded, {
        id: randomUUID(),
        payload: { cheese: cheese(id) },
      });

    await expect
      .poll(async () => (await deliveries(hook.id)).filter((d) => d.status === "dead_lettered").length, {
        timeout: 15_000,
      })
      .toBe(4);
    const recorded = await deliveries(hook.id);
    // Stopped (in-flight attempts finish first), the replicas send nothing more.
    for (const service of running.splice(0)) await service.stop();
    const perEvent = new Map<string, number>();
    for (const request of receiver.requests("/shared")) {
      const id = String(request.headers["webhook-id"]);
      perEvent.set(id, (perEvent.get(id) ?? 0) + 1);
    }
    expect([...perEvent.values()]).toEqual([6, 6, 6, 6]);
    for (const delivery of recorded) expect(delivery.attempts).toHaveLength(6);
  });

  it("keeps a receiver that times out from delaying the others: it holds only its own slots", async () => {
    // Its 12 deliveries would take every one of the process's 6 slots; it may hold only 4.
    await startReplica({
      WEBHOOK_TIMEOUT: "800ms",
      WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: "4",
      WEBHOOK_MAX_IN_FLIGHT: "6",
    });
    receiver.behave("/stuck", { delayMs: 5000 });
    const stuck = await register("/stuck", ["webhook.test"]);
    const prompt = await register("/prompt", ["webhook.test"]);
    for (let i = 0; i < 12; i++) await rpc(notificationRpc.sendTestEvent, { webhookId: stuck.id });
    await receiver.waitFor("/stuck", 1);

    const sent = Date.now();
    await rpc(notificationRpc.sendTestEvent, { webhookId: prompt.id });
    const [request] = await receiver.waitFor("/prompt", 1);
    expect(request!.receivedAt - sent).toBeLessThan(500);
  });

  it("takes over an attempt left in flight by a process that died, counting it as failed", async () => {
    const first = await startReplica();
    const hook = await register("/recovered", ["webhook.test"]);
    await first.stop();
    running.splice(0);

    // What a SIGKILL between claim and result leaves behind: an attempt started long ago, no result.
    const store = createSqliteEventStore({ file: join(data.path, "notification", "events.sqlite") });
    const longAgo = new Date(Date.now() - 3_600_000).toISOString();
    await store.append(
      "delivery-900001",
      [
        {
          type: "DeliveryCreated",
          data: {
            deliveryId: 900001,
            webhookId: hook.id,
            eventId: "evt_0123456789abcdef0123456789abcdef",
            eventType: "webhook.test",
            body: '{"id":"evt_0123456789abcdef0123456789abcdef","type":"webhook.test","created_at":"2026-01-01T00:00:00.000Z","data":{}}',
            createdAt: longAgo,
            dueAt: longAgo,
          },
        },
        { type: "AttemptStarted", data: { round: 0, attempt: 1, startedAt: longAgo } },
      ],
      { expectedRevision: "no_stream" },
    );
    await store.close();

    await startReplica();
    const [request] = await receiver.waitFor("/recovered", 1);
    expect(request!.headers["webhook-id"]).toBe("evt_0123456789abcdef0123456789abcdef");
    await expect.poll(async () => (await deliveries(hook.id))[0]?.status).toBe("delivered");
    const [delivery] = await deliveries(hook.id);
    expect(delivery!.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, "unknown"],
      [2, "succeeded"],
    ]);
  });

  it("cancels waiting deliveries when their registration is deleted", async () => {
    await startReplica({ WEBHOOK_RETRY_DELAYS: "0,1h" });
    receiver.behave("/doomed", { status: 500 });
    const hook = await register("/doomed", ["webhook.test"]);
    const { deliveryId } = await rpc(notificationRpc.sendTestEvent, { webhookId: hook.id });
    await receiver.waitFor("/doomed", 1);
    await expect.poll(async () => (await deliveries(hook.id))[0]?.status).toBe("retry_scheduled");
    await rpc(notificationRpc.deleteWebhook, { webhookId: hook.id });
    await expect(
      rpc(notificationRpc.listDeliveries, { webhookId: hook.id, limit: 10 }),
    ).rejects.toMatchObject({
      body: { status: 404 },
    });
    const store = createSqliteEventStore({ file: join(data.path, "notification", "events.sqlite") });
    const events = await store.readStream(`delivery-${deliveryId}`);
    await store.close();
    expect(events.at(-1)).toMatchObject({ type: "DeliveryCancelled", data: { reason: "webhook deleted" } });
  });
});
