import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

/**
 * A registration's throttle (docs/webhooks.md "Throttle") on the multi-process system with two
 * processes of every service (`REPLICAS=2`), so two notification processes share the
 * registration's deliveries: its attempts are spaced all the same, and none is dropped.
 */
describe("a throttled registration", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  const { api } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: { REPLICAS: "2", WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_DELAYS: "0,100ms,100ms" },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  it("runs two notification processes", () => {
    expect(system.pids().notification).toHaveLength(2);
  });

  it("spaces 10 events at 2 per second, none lost", async () => {
    const created = await api("POST", "/webhooks", {
      url: receiver.url("/throttled"),
      events: ["webhook.test"],
      rateLimit: { perSecond: 2 },
    });
    expect(created.status).toBe(201);
    const { id, rateLimit } = await json(created);
    expect(rateLimit).toEqual({ perSecond: 2 });

    const sent = await Promise.all(
      Array.from({ length: 10 }, () => api("POST", `/webhooks/${id}/test`).then((r) => r.status)),
    );
    expect(sent).toEqual(Array(10).fill(202));

    const requests = await receiver.waitFor("/throttled", 10, 30_000);
    expect(new Set(requests.map((request) => envelopeOf(request).id)).size).toBe(10);
    const times = requests.map((request) => request.receivedAt).sort((a, b) => a - b);
    // 9 intervals of 500 ms: 4.5 s, less what the processes' own jitter takes off.
    expect(times[9]! - times[0]!).toBeGreaterThanOrEqual(4000);
    // Never more than 2 (and one of jitter) within any second.
    for (const start of times)
      expect(times.filter((t) => t >= start && t < start + 1000).length).toBeLessThanOrEqual(3);

    await expect
      .poll(
        async () =>
          (await json(await api("GET", `/webhooks/${id}/deliveries?status=delivered&limit=100`))).items
            .length,
        { timeout: 20_000 },
      )
      .toBe(10);
    // Settled, with nothing left over: exactly one request per delivery.
    expect(receiver.requests("/throttled")).toHaveLength(10);
  });

  it("lifts the throttle when PATCH sets it to null", async () => {
    const created = await json(
      await api("POST", "/webhooks", {
        url: receiver.url("/lifted"),
        events: ["webhook.test"],
        rateLimit: { perSecond: 1 },
      }),
    );
    const patched = await api("PATCH", `/webhooks/${created.id}`, { rateLimit: null });
    expect(patched.status).toBe(200);
    expect((await json(patched)).rateLimit).toBeNull();
    for (let i = 0; i < 4; i++) expect((await api("POST", `/webhooks/${created.id}/test`)).status).toBe(202);
    const requests = await receiver.waitFor("/lifted", 4, 20_000);
    const times = requests.map((request) => request.receivedAt);
    // At 1 per second these four would take 3 s.
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(2500);
  });
});
