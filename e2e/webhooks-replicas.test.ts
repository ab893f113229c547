import { randomUUID } from "node:crypto";
import { envelopeOf, type ReceivedRequest, Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

/** Two processes of every backend service (REPLICAS=2), the notification service included. */
describe("webhooks with two notification replicas", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: {
        REPLICAS: "2",
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,200ms,200ms,200ms,200ms,200ms",
        // The default receiver time-out (10 s): a short one would turn a receiver answering late
        // on a loaded machine into a second attempt of a delivery that arrived.
      },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const { api, register } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));
  const countById = (requests: ReceivedRequest[]) => {
    const counts = new Map<string, number>();
    for (const request of requests) {
      const id = envelopeOf(request).id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  };

  it("runs two notification processes", () => {
    expect(system.pids().notification).toHaveLength(2);
  });

  it("makes each attempt once: six per failing delivery, never twelve", async () => {
    receiver.behave("/failing", { status: 500 });
    const hook = await register("/failing", ["webhook.test"]);
    for (let i = 0; i < 5; i++) expect((await api("POST", `/webhooks/${hook.id}/test`)).status).toBe(202);

    await expect
      .poll(
        async () =>
          (await json(await api("GET", `/webhooks/${hook.id}/deliveries?status=dead_lettered`))).items.length,
        { timeout: 30_000, interval: 300 },
      )
      .toBe(5);
    // Dead-lettered, each delivery is over: every attempt's request arrived before it was recorded.
    expect([...countById(receiver.requests("/failing")).values()]).toEqual([6, 6, 6, 6, 6]);
    const { items } = await json(await api("GET", `/webhooks/${hook.id}/deliveries`));
    for (const delivery of items) {
      expect(delivery.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    }
  });

  it("delivers the events of a source first wanted on one replica from either, also after a restart", async () => {
    // No registration of this suite wants a customer kind before: the customer events' durable
    // is created by this registration, before its 201.
    const hook = await register("/customers", ["customer.created"]);
    // The killed process ran a replica of the customer service too: right after a kill the
    // system may answer a create 503 (with Retry-After) for a moment, and a client asks again.
    const newCustomer = async () => {
      let username = "";
      await expect
        .poll(
          async () => {
            username = `replica_${randomUUID().slice(0, 8)}`;
            const body = { username, email: `${username}@example.com`, password: "correct horse battery" };
            return (await api("POST", "/customer", body, {})).status;
          },
          { timeout: 20_000, interval: 250 },
        )
        .toBe(201);
      return username;
    };
    const arrived = (username: string) =>
      expect
        .poll(
          () =>
            receiver
              .requests("/customers")
              .some((r) => verifyWebhook(hook.secret, r.rawBody, r.headers).data.username === username),
          { timeout: 20_000, interval: 100 },
        )
        .toBe(true);
    await arrived(await newCustomer());
    // Each replica in turn is killed: the other, whichever recorded the registration, takes the
    // events; then the first, restarted, takes them alone, its source found in its read model.
    const [first, second] = system.pids().notification!;
    for (const killed of [first!, second!]) {
      process.kill(killed, "SIGKILL");
      await expect.poll(() => system.pids().notification!.includes(killed)).toBe(false);
      await arrived(await newCustomer());
      await expect.poll(() => system.pids().notification!.length, { timeout: 30_000, interval: 200 }).toBe(2);
    }
    await arrived(await newCustomer());
    expect([...countById(receiver.requests("/customers")).values()].every((n) => n === 1)).toBe(true);
  });

  it("delivers each event once to a healthy receiver", async () => {
    const hook = await register("/arrivals", ["cheese.new_arrival"]);
    const names = Array.from({ length: 8 }, (_, i) => `Replica Cheese ${i}`);
    for (const name of names) expect((await api("POST", "/cheeses", { name }, auth.bearer)).status).toBe(201);

    await receiver.waitFor("/arrivals", names.length);
    // Delivered, each delivery is over, after one attempt: nothing more will come.
    const delivered = async () =>
      (await json(await api("GET", `/webhooks/${hook.id}/deliveries`))).items.map(
        (d: { status: string; attempts: unknown[] }) => [d.status, d.attempts.length],
      );
    await expect.poll(delivered).toEqual(names.map(() => ["delivered", 1]));
    const requests = receiver.requests("/arrivals");
    expect(requests).toHaveLength(names.length);
    expect([...countById(requests).values()].every((n) => n === 1)).toBe(true);
    const received = requests.map((r) => verifyWebhook(hook.secret, r.rawBody, r.headers).data.name).sort();
    expect(received).toEqual([...names].sort());
  });
});
