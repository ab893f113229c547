import { Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

interface Attempt {
  attempt: number;
  outcome: string;
  statusCode: number | null;
  retryAfter?: string;
  steer?: string;
}
interface Delivery {
  id: number;
  status: string;
  attempts: Attempt[];
}

/**
 * Receivers that steer (docs/webhooks.md "Receivers steer") on the multi-process system with a
 * retry table of 100 ms steps: a Retry-After (seconds or an HTTP date) defers the next attempt,
 * a 410 Gone or `webhook-delivery: disable` disables the registration, `webhook-delivery: abort`
 * dead-letters the delivery after one attempt.
 */
describe("receivers steer their deliveries", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  const { api, register, sendTest } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,100ms,100ms,100ms",
        // Longer than any Retry-After the tests honour in full, far shorter than the hour one asks.
        WEBHOOK_RETRY_AFTER_MAX: "4s",
      },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const delivery = async (webhookId: number, deliveryId: number): Promise<Delivery | undefined> =>
    (await json(await api("GET", `/webhooks/${webhookId}/deliveries?limit=100`))).items.find(
      (d: Delivery) => d.id === deliveryId,
    );
  const statusOf = (webhookId: number, deliveryId: number) =>
    expect.poll(async () => (await delivery(webhookId, deliveryId))?.status, { timeout: 20_000 });
  const attemptOf = (webhookId: number, deliveryId: number) =>
    expect.poll(async () => (await delivery(webhookId, deliveryId))?.attempts[0], { timeout: 20_000 });

  it("waits as long as a 503's Retry-After asks, though the retry table says 100 ms", async () => {
    receiver.behave("/busy", (_request, count) =>
      count === 1 ? { status: 503, headers: { "retry-after": "2" } } : { status: 204 },
    );
    const { id } = await register("/busy");
    const deliveryId = await sendTest(id);

    await statusOf(id, deliveryId).toBe("delivered");
    const [first, second] = receiver.requests("/busy");
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(2000);
    const { attempts } = (await delivery(id, deliveryId))!;
    expect(attempts.map((a) => [a.statusCode, a.outcome])).toEqual([
      [503, "failed"],
      [204, "succeeded"],
    ]);
    expect(Date.parse(attempts[0]!.retryAfter!)).toBeGreaterThanOrEqual(first!.receivedAt + 2000);
  });

  it("waits until the HTTP date a 429's Retry-After names", async () => {
    // An HTTP date has a resolution of a second: two to three seconds from the first answer.
    let notBefore = 0;
    receiver.behave("/throttled", (_request, count) => {
      if (count > 1) return { status: 204 };
      notBefore = (Math.floor(Date.now() / 1000) + 3) * 1000;
      return { status: 429, headers: { "retry-after": new Date(notBefore).toUTCString() } };
    });
    const { id } = await register("/throttled");
    const deliveryId = await sendTest(id);

    await statusOf(id, deliveryId).toBe("delivered");
    const [, second] = receiver.requests("/throttled");
    expect(second!.receivedAt).toBeGreaterThanOrEqual(notBefore);
    const { attempts } = (await delivery(id, deliveryId))!;
    expect(attempts.map((a) => a.statusCode)).toEqual([429, 204]);
    expect(Date.parse(attempts[0]!.retryAfter!)).toBe(notBefore);
  });

  it("defers no longer than WEBHOOK_RETRY_AFTER_MAX, though Retry-After asks for an hour", async () => {
    receiver.behave("/greedy", (_request, count) =>
      count === 1 ? { status: 503, headers: { "retry-after": "3600" } } : { status: 204 },
    );
    const { id } = await register("/greedy");
    const deliveryId = await sendTest(id);

    await statusOf(id, deliveryId).toBe("delivered");
    const [first, second] = receiver.requests("/greedy");
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(4000);
  });

  it("disables a registration whose receiver answers 410 Gone, and tells the others", async () => {
    const watcher = await register("/watch", ["webhook.disabled"]);
    receiver.behave("/gone", { status: 410 });
    const { id } = await register("/gone");
    const deliveryId = await sendTest(id);

    await expect
      .poll(async () => (await json(await api("GET", `/webhooks/${id}`))).status, { timeout: 20_000 })
      .toBe("disabled");
    const disabled = await json(await api("GET", `/webhooks/${id}`));
    expect(disabled.statusReason).toMatch(/410 Gone/);
    // The delivery's history is a read model of its own, which may show the attempt a moment later.
    await attemptOf(id, deliveryId).toMatchObject({ statusCode: 410, steer: "gone" });

    const [notice] = await receiver.waitFor("/watch", 1, 20_000);
    expect(verifyWebhook(watcher.secret, notice!.rawBody, notice!.headers)).toMatchObject({
      type: "webhook.disabled",
      data: { webhook_id: String(id), reason: disabled.statusReason },
    });
  });

  it("disables a registration whose receiver answers webhook-delivery: disable, whatever the status", async () => {
    receiver.behave("/unwanted", { status: 400, headers: { "webhook-delivery": "disable" } });
    const { id } = await register("/unwanted");
    const deliveryId = await sendTest(id);

    await expect
      .poll(async () => (await json(await api("GET", `/webhooks/${id}`))).status, { timeout: 20_000 })
      .toBe("disabled");
    expect((await json(await api("GET", `/webhooks/${id}`))).statusReason).toMatch(
      /webhook-delivery: disable/,
    );
    await attemptOf(id, deliveryId).toMatchObject({ statusCode: 400, steer: "disable" });
    // Not dead-lettered as abort would: it waits, as every delivery of a disabled registration does
    // (a replica may claim its next attempt and give it back unsent: "attempting" for a moment).
    await statusOf(id, deliveryId).toBe("retry_scheduled");
    expect(receiver.requests("/unwanted")).toHaveLength(1);
  });

  it("dead-letters a delivery after one attempt when the receiver answers webhook-delivery: abort", async () => {
    receiver.behave("/abort", { status: 400, headers: { "webhook-delivery": "abort" } });
    const { id } = await register("/abort");
    const deliveryId = await sendTest(id);

    await statusOf(id, deliveryId).toBe("dead_lettered");
    const { attempts } = (await delivery(id, deliveryId))!;
    expect(attempts).toEqual([expect.objectContaining({ attempt: 1, statusCode: 400, steer: "abort" })]);
    expect(receiver.requests("/abort")).toHaveLength(1);
    // Still a registration like any other: it was the delivery that was given up.
    expect((await json(await api("GET", `/webhooks/${id}`))).status).toBe("active");
  });
});
