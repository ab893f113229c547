import { envelopeOf, type ReceivedRequest, Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { natsAs } from "./support/nats-identity.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

const RETRY_GAP_MS = 300;

/**
 * Webhooks end to end: the system as `pnpm start` runs it, a real receiver on 127.0.0.1, retries
 * on a fast schedule (WEBHOOK_RETRY_DELAYS 0 then 300 ms five times), a 1 s receiver time-out.
 */
describe("webhooks over HTTP, delivered to a real receiver", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  const secrets: string[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: `0,${RETRY_GAP_MS}ms,${RETRY_GAP_MS}ms,${RETRY_GAP_MS}ms,${RETRY_GAP_MS}ms,${RETRY_GAP_MS}ms`,
        WEBHOOK_TIMEOUT: "1s",
        LOG_LEVEL: "info",
      },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const calls = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));
  const { api } = calls;
  const register = async (path: string, events: string[]) => {
    const created = await calls.register(path, events);
    secrets.push(created.secret);
    return created;
  };
  const deliveries = async (webhookId: number, query = "") =>
    (await json(await api("GET", `/webhooks/${webhookId}/deliveries${query}`))).items;
  const expectSigned = (request: ReceivedRequest, secret: string) => {
    const envelope = verifyWebhook(secret, request.rawBody, request.headers);
    expect(request.headers["x-cheese-event"]).toBe(envelope.type);
    expect(request.headers["x-cheese-delivery"]).toMatch(/^\d+$/);
    expect(Math.abs(Number(request.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(60);
    return envelope;
  };

  /** How many `cheese.added` integration events the EVENTS stream holds, read as operators do. */
  const addedEventsPublished = async () => {
    const monitor = await natsAs(system, "monitor");
    try {
      const subject = "events.catalogue.cheese.added";
      const { state } = await (await monitor.jetstreamManager()).streams.info("EVENTS", {
        subjects_filter: subject,
      });
      return (state.subjects as Record<string, number> | undefined)?.[subject] ?? 0;
    } finally {
      await monitor.close();
    }
  };

  /** A customer's personal API key: valid credentials, but not an operator's. */
  const customerApiKey = async () => {
    const username = `hooks_${Date.now()}`;
    const password = "correct horse battery";
    const customer = { username, email: `${username}@example.com`, password };
    expect((await api("POST", "/customer", customer, {})).status).toBe(201);
    const { token } = await json(await api("POST", "/customer/login", { username, password }, {}));
    const issued = await api(
      "POST",
      `/customer/${username}/apiKeys`,
      {},
      { authorization: `Bearer ${token}` },
    );
    expect(issued.status).toBe(201);
    return { "x-api-key": (await json(issued)).key as string };
  };

  it("sends cheese.new_arrival, signed, when a cheese is created, and only to registrations that want it", async () => {
    // Created while no registration wants a catalogue kind, and published before the registration:
    // the promise is about publication (docs/webhooks.md, "Sources"), and the outbox relay
    // publishes an append a little after its 201, from whichever catalogue replica holds the lease.
    const published = await addedEventsPublished();
    const before = await api("POST", "/cheeses", { name: "Unwatched Tomme", pricePerKg: 20 }, auth.bearer);
    expect(before.status).toBe(201);
    await expect.poll(addedEventsPublished).toBe(published + 1);
    // The first registration for a catalogue kind: every cheese created after its 201 reaches it.
    const arrivals = await register("/arrivals", ["cheese.new_arrival"]);
    await register("/orders-only", ["order.placed"]);
    const created = await api(
      "POST",
      "/cheeses",
      { name: "Webhook Tomme", category: { name: "Semi-soft" }, pricePerKg: 24.5, organic: true },
      auth.bearer,
    );
    expect(created.status).toBe(201);
    const cheese = await json(created);

    const [request] = await receiver.waitFor("/arrivals", 1);
    const envelope = expectSigned(request!, arrivals.secret);
    expect(envelope).toMatchObject({
      type: "cheese.new_arrival",
      data: {
        cheese_id: String(cheese.id),
        name: "Webhook Tomme",
        category: "Semi-soft",
        price_per_kg: 24.5,
        organic: true,
        status: "available",
      },
    });
    expect(envelope.id).toBe(request!.headers["webhook-id"]);

    await expect.poll(async () => (await deliveries(arrivals.id))[0]?.status).toBe("delivered");
    const [delivery] = await deliveries(arrivals.id);
    expect(delivery).toMatchObject({
      eventId: envelope.id,
      eventType: "cheese.new_arrival",
      deadLettered: false,
    });
    expect(String(delivery.id)).toBe(request!.headers["x-cheese-delivery"]);
    expect(await deliveries(arrivals.id)).toHaveLength(1);
    expect(receiver.requests("/orders-only")).toHaveLength(0);
  });

  it("sends webhook.test on request: 202 with the delivery id it arrives under", async () => {
    const hook = await register("/test-events", ["order.placed"]);
    const accepted = await api("POST", `/webhooks/${hook.id}/test`);
    expect(accepted.status).toBe(202);
    const { deliveryId } = await json(accepted);
    const [request] = await receiver.waitFor("/test-events", 1);
    expect(expectSigned(request!, hook.secret)).toMatchObject({
      type: "webhook.test",
      data: { webhook_id: String(hook.id) },
    });
    expect(request!.headers["x-cheese-delivery"]).toBe(String(deliveryId));
  });

  it("gives a receiver answering 500 six attempts at the configured gaps, dead-letters it, and replays it with the same event id", async () => {
    receiver.behave("/failing", { status: 500 });
    const hook = await register("/failing", ["webhook.test"]);
    const { deliveryId } = await json(await api("POST", `/webhooks/${hook.id}/test`));

    const attempts = await receiver.waitFor("/failing", 6, 30_000);
    for (let i = 1; i < 6; i++) {
      const gap = attempts[i]!.receivedAt - attempts[i - 1]!.receivedAt;
      expect(gap, `gap before attempt ${i + 1}`).toBeGreaterThanOrEqual(RETRY_GAP_MS - 5);
      expect(gap, `gap before attempt ${i + 1}`).toBeLessThan(RETRY_GAP_MS + 3000);
    }
    const eventIds = new Set(attempts.map((r) => envelopeOf(r).id));
    expect(eventIds.size).toBe(1);
    for (const attempt of attempts) expectSigned(attempt, hook.secret);

    await expect
      .poll(async () => (await deliveries(hook.id))[0]?.status, { timeout: 10_000 })
      .toBe("dead_lettered");
    const [dead] = await deliveries(hook.id, "?status=dead_lettered");
    expect(dead).toMatchObject({ id: deliveryId, deadLettered: true, nextAttemptAt: null });
    expect(dead.attempts).toHaveLength(6);
    for (const [index, attempt] of dead.attempts.entries()) {
      expect(attempt).toMatchObject({ attempt: index + 1, round: 0, outcome: "failed", statusCode: 500 });
      expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(attempt.startedAt)).not.toBeNaN();
    }
    // Every attempt is recorded after its request arrived: dead-lettered, all six are here.
    expect(receiver.requests("/failing")).toHaveLength(6);

    receiver.behave("/failing", { status: 200 });
    const replay = await api("POST", `/webhooks/${hook.id}/replay`);
    expect(replay.status).toBe(202);
    expect(await json(replay)).toEqual({ replayed: 1 });
    const seventh = (await receiver.waitFor("/failing", 7))[6]!;
    expect(envelopeOf(seventh).id).toBe([...eventIds][0]);
    expect(seventh.headers["webhook-id"]).toBe([...eventIds][0]);
    expect(seventh.body).toBe(attempts[0]!.body);
    expectSigned(seventh, hook.secret);
    await expect.poll(async () => (await deliveries(hook.id))[0]?.status).toBe("delivered");
    expect((await deliveries(hook.id, "?status=dead_lettered")).length).toBe(0);
    // Delivered, the delivery is over: six attempts, then the replay, and nothing else came.
    expect((await deliveries(hook.id))[0]?.attempts).toHaveLength(7);
    expect(receiver.requests("/failing")).toHaveLength(7);
  });

  it("loses and duplicates nothing when the notification process is SIGKILLed in the middle of a retry schedule", async () => {
    receiver.behave("/killed", { status: 500 });
    const hook = await register("/killed", ["webhook.test"]);
    for (let i = 0; i < 3; i++) expect((await api("POST", `/webhooks/${hook.id}/test`)).status).toBe(202);
    await receiver.waitFor("/killed", 6, 15_000); // about attempt 2 of each

    // The launcher replaces processes.json whole: it reads complete whenever it is read.
    const notificationPids = () => system.pids().notification ?? [];
    const [victim] = notificationPids();
    process.kill(victim!, "SIGKILL");
    await expect
      .poll(() => notificationPids().length > 0 && !notificationPids().includes(victim!), { timeout: 20_000 })
      .toBe(true);

    await expect
      .poll(async () => (await deliveries(hook.id, "?status=dead_lettered")).length, {
        timeout: 45_000,
        interval: 500,
      })
      .toBe(3);
    // Dead-lettered, every delivery is over: each attempt recorded with an answer arrived before it
    // was recorded. The attempt the kill interrupted is recorded with outcome "unknown" once its
    // lease ends; the receiver got it unless the kill fell between its claim and its send.
    const perEvent = new Map<string, number>();
    for (const request of receiver.requests("/killed")) {
      const id = envelopeOf(request).id;
      perEvent.set(id, (perEvent.get(id) ?? 0) + 1);
    }
    const all = await deliveries(hook.id);
    expect(all).toHaveLength(3);
    for (const delivery of all) {
      expect(delivery.attempts).toHaveLength(6);
      const unknown = delivery.attempts.filter((a: { outcome: string }) => a.outcome === "unknown").length;
      const received = perEvent.get(delivery.eventId) ?? 0;
      const said = `${delivery.eventId}: ${unknown} attempt(s) of unknown outcome`;
      expect(received, said).toBeLessThanOrEqual(6);
      expect(received, said).toBeGreaterThanOrEqual(6 - unknown);
    }
  });

  it("keeps a receiver that sleeps past the time-out from delaying another receiver", async () => {
    const baseline = await register("/prompt", ["webhook.test"]);
    const before = Date.now();
    await api("POST", `/webhooks/${baseline.id}/test`);
    const [first] = await receiver.waitFor("/prompt", 1);
    const alone = first!.receivedAt - before;

    receiver.behave("/asleep", { delayMs: 5000 });
    const asleep = await register("/asleep", ["webhook.test"]);
    for (let i = 0; i < 12; i++) await api("POST", `/webhooks/${asleep.id}/test`);
    await receiver.waitFor("/asleep", 3);

    const sent = Date.now();
    await api("POST", `/webhooks/${baseline.id}/test`);
    const [, second] = await receiver.waitFor("/prompt", 2);
    const meanwhile = second!.receivedAt - sent;
    expect(meanwhile, `alone ${alone} ms`).toBeLessThan(1000);
    expect((await api("DELETE", `/webhooks/${asleep.id}`)).status).toBe(204);
  });

  it("manages registrations with operator keys only, and never shows or logs a secret again", async () => {
    const hook = await register("/private", ["order.shipped"]);
    const read = await api("GET", `/webhooks/${hook.id}`);
    expect(read.status).toBe(200);
    expect(await json(read)).not.toHaveProperty("secret");
    expect((await api("GET", "/webhooks", undefined, auth.bearer)).status).toBe(403);
    expect((await api("GET", "/webhooks", undefined, {})).status).toBe(401);
    expect((await api("GET", "/webhooks", undefined, await customerApiKey())).status).toBe(403);
    const unknownKind = await api("POST", "/webhooks", {
      url: receiver.url("/x"),
      events: ["cheese.melted"],
    });
    expect(unknownKind.status).toBe(422);

    const list = await (await api("GET", "/webhooks?limit=100")).text();
    const output = system.output();
    for (const secret of secrets) {
      expect(list).not.toContain(secret);
      expect(output).not.toContain(secret);
    }
  });
});
