import { type Behaviour, envelopeOf, Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

interface AttemptDetail {
  round: number;
  attempt: number;
  outcome: string;
  statusCode: number | null;
  error: string | null;
  request: { url: string; headers: Record<string, string> } | null;
  response: { headers: Record<string, string>; body: string; bodyTruncated: boolean } | null;
}

/**
 * Issue 26 point 6: an operator sees every byte of a delivery (each attempt's request and the
 * receiver's answer), resends one delivery, and filters the list by kind and status. Run with
 * E2E_REPLICAS=2 LAUNCH_MODE=separate too: the resend is made once by either replica.
 */
describe("a delivery's request and answers, resend and filters", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_DELAYS: "0,200ms,200ms,200ms,200ms,200ms" },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const { api, register } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));
  const detail = async (webhookId: number, deliveryId: number) => {
    const response = await api("GET", `/webhooks/${webhookId}/deliveries/${deliveryId}`);
    expect(response.status).toBe(200);
    return (await json(response)) as {
      status: string;
      eventId: string;
      body: string;
      attempts: AttemptDetail[];
    };
  };

  it("shows both attempts of a delivery answered 500 then 200: the request's headers and body, and each answer", async () => {
    receiver.behave(
      "/flaky",
      (_request, count): Behaviour =>
        count === 1
          ? { status: 500, body: "database is down", headers: { "x-receiver": "first" } }
          : { status: 200, body: '{"ok":true}', headers: { "content-type": "application/json" } },
    );
    const hook = await register("/flaky");
    const sent = await json(await api("POST", `/webhooks/${hook.id}/test`));
    await expect
      .poll(async () => (await detail(hook.id, sent.deliveryId)).status, { timeout: 20_000 })
      .toBe("delivered");

    const delivery = await detail(hook.id, sent.deliveryId);
    const received = receiver.requests("/flaky");
    expect(received).toHaveLength(2);
    expect(delivery.body).toBe(received[0]!.body);
    expect(envelopeOf(received[0]!).type).toBe("webhook.test");
    const [first, second] = delivery.attempts;
    expect(first).toMatchObject({
      round: 0,
      attempt: 1,
      outcome: "failed",
      statusCode: 500,
      response: { body: "database is down", bodyTruncated: false, headers: { "x-receiver": "first" } },
    });
    expect(second).toMatchObject({
      round: 0,
      attempt: 2,
      outcome: "succeeded",
      statusCode: 200,
      response: { body: '{"ok":true}', headers: { "content-type": "application/json" } },
    });
    // Each attempt's headers are those the receiver got, signatures included.
    for (const [index, attempt] of delivery.attempts.entries()) {
      const got = received[index]!.headers;
      expect(attempt.request?.url).toBe(receiver.url("/flaky"));
      for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature", "x-cheese-signature"]) {
        expect(attempt.request?.headers[name]).toBe(got[name]);
      }
      expect(attempt.request?.headers["content-type"]).toBe("application/json");
    }
    // The list stays light: outcomes only, no bytes.
    const { items } = await json(await api("GET", `/webhooks/${hook.id}/deliveries`));
    expect(items[0].attempts[0]).not.toHaveProperty("response");
  });

  it("keeps the first 4 KiB of a long answer and the network error when none came", async () => {
    receiver.behave("/long", { status: 400, body: "x".repeat(10_000) });
    const hook = await register("/long");
    const sent = await json(await api("POST", `/webhooks/${hook.id}/test`));
    await expect
      .poll(async () => (await detail(hook.id, sent.deliveryId)).attempts[0]?.outcome, { timeout: 20_000 })
      .toBe("failed");
    const [attempt] = (await detail(hook.id, sent.deliveryId)).attempts;
    expect(attempt!.response!.body).toHaveLength(4096);
    expect(attempt!.response!.bodyTruncated).toBe(true);

    const closed = await Receiver.start();
    const gone = closed.url("/gone");
    await closed.close();
    const refused = await json(await api("POST", "/webhooks", { url: gone, events: ["webhook.test"] }));
    const refusedSent = await json(await api("POST", `/webhooks/${refused.id}/test`));
    await expect
      .poll(async () => (await detail(refused.id, refusedSent.deliveryId)).attempts[0]?.error, {
        timeout: 20_000,
      })
      .toBe("connection refused");
    const [noAnswer] = (await detail(refused.id, refusedSent.deliveryId)).attempts;
    expect(noAnswer).toMatchObject({ statusCode: null, response: null, request: { url: gone } });
  });

  it("resends a delivered delivery as a new round the receiver gets, with the same webhook-id and a fresh signature", async () => {
    const hook = await register("/resend");
    const sent = await json(await api("POST", `/webhooks/${hook.id}/test`));
    await expect
      .poll(async () => (await detail(hook.id, sent.deliveryId)).status, { timeout: 20_000 })
      .toBe("delivered");
    // A timestamp has a resolution of a second: the resent one must differ.
    const firstTimestamp = Number(receiver.requests("/resend")[0]!.headers["webhook-timestamp"]);
    await expect
      .poll(() => Math.floor(Date.now() / 1000), { timeout: 2_000 })
      .toBeGreaterThan(firstTimestamp);

    const resent = await api("POST", `/webhooks/${hook.id}/deliveries/${sent.deliveryId}/resend`);
    expect(resent.status).toBe(202);
    expect(await json(resent)).toEqual({ deliveryId: sent.deliveryId, round: 1 });
    const [original, again] = await receiver.waitFor("/resend", 2);
    expect(again!.headers["webhook-id"]).toBe(original!.headers["webhook-id"]);
    expect(again!.body).toBe(original!.body);
    expect(Number(again!.headers["webhook-timestamp"])).toBeGreaterThan(firstTimestamp);
    expect(again!.headers["webhook-signature"]).not.toBe(original!.headers["webhook-signature"]);

    await expect
      .poll(async () => (await detail(hook.id, sent.deliveryId)).attempts.map((a) => [a.round, a.outcome]), {
        timeout: 20_000,
      })
      .toEqual([
        [0, "succeeded"],
        [1, "succeeded"],
      ]);
    expect(receiver.requests("/resend")).toHaveLength(2);
  });

  it("starts one round for two resends sent at once (one 202, one 409), whichever replica takes each", async () => {
    // The new round waits at the receiver, so a resend that comes second finds it under way.
    let open: () => void = () => {};
    const barrier = new Promise<void>((resolve) => {
      open = resolve;
    });
    receiver.behave("/resend-race", (_request, count): Behaviour => (count === 1 ? {} : { until: barrier }));
    const hook = await register("/resend-race");
    const sent = await json(await api("POST", `/webhooks/${hook.id}/test`));
    await expect
      .poll(async () => (await detail(hook.id, sent.deliveryId)).status, { timeout: 20_000 })
      .toBe("delivered");
    const resend = () => api("POST", `/webhooks/${hook.id}/deliveries/${sent.deliveryId}/resend`);
    const statuses = (await Promise.all([resend(), resend()])).map((r) => r.status).sort();
    expect(statuses).toEqual([202, 409]);
    await receiver.waitFor("/resend-race", 2);
    open();
    await expect
      .poll(async () => (await detail(hook.id, sent.deliveryId)).attempts.map((a) => [a.round, a.outcome]), {
        timeout: 20_000,
      })
      .toEqual([
        [0, "succeeded"],
        [1, "succeeded"],
      ]);
    expect(receiver.requests("/resend-race")).toHaveLength(2);
  });

  it("refuses a resend while the delivery is on its way (409) and of an unknown one (404)", async () => {
    let open: () => void = () => {};
    const barrier = new Promise<void>((resolve) => {
      open = resolve;
    });
    receiver.behave("/slow", { until: barrier });
    const hook = await register("/slow");
    const sent = await json(await api("POST", `/webhooks/${hook.id}/test`));
    await receiver.waitFor("/slow", 1);
    const busy = await api("POST", `/webhooks/${hook.id}/deliveries/${sent.deliveryId}/resend`);
    expect(busy.status).toBe(409);
    open();
    const unknown = await api("POST", `/webhooks/${hook.id}/deliveries/999999/resend`);
    expect(unknown.status).toBe(404);
    expect((await api("GET", `/webhooks/${hook.id}/deliveries/999999`)).status).toBe(404);
    // Another registration's delivery is not found under this one.
    const other = await register("/other");
    expect((await api("GET", `/webhooks/${other.id}/deliveries/${sent.deliveryId}`)).status).toBe(404);
  });

  it("filters deliveries by kind and status, and names an unknown value's parameter", async () => {
    receiver.behave("/kinds", { status: 200 });
    const hook = await register("/kinds", ["webhook.test", "cheese.new_arrival"]);
    const test = await json(await api("POST", `/webhooks/${hook.id}/test`));
    expect((await api("POST", "/cheeses", { name: "Filtered Brie" }, auth.bearer)).status).toBe(201);
    const list = async (query: string) =>
      (await json(await api("GET", `/webhooks/${hook.id}/deliveries?${query}`))).items as {
        id: number;
        eventType: string;
        status: string;
      }[];
    await expect.poll(async () => (await list("status=delivered")).length, { timeout: 20_000 }).toBe(2);
    expect((await list("type=webhook.test")).map((d) => d.id)).toEqual([test.deliveryId]);
    expect((await list("type=cheese.new_arrival")).map((d) => d.eventType)).toEqual(["cheese.new_arrival"]);
    expect(await list("type=cheese.new_arrival&status=dead_lettered")).toEqual([]);
    expect(await list("type=order.placed,cheese.low_stock")).toEqual([]);

    for (const [query, parameter] of [
      ["type=order.eaten", "type"],
      ["status=lost", "status"],
    ] as const) {
      const response = await api("GET", `/webhooks/${hook.id}/deliveries?${query}`);
      expect(response.status).toBe(400);
      expect((await json(response)).message).toMatch(new RegExp(`^invalid query parameter: ${parameter}\\b`));
    }
  });
});
