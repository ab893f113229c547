import type { MessageBus } from "@cheese/messaging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayAndNotification } from "./support/gateway-in-process.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY } from "./support/system.ts";

// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
const read = (response: Response): Promise<any> => response.json();

/**
 * The gateway, the notification service (which answers for the bus's dead letters) and another
 * service's consumer, over one in-process bus: the consumer fails while `broken`, and gives an
 * event up to the dead letters after 300 ms of failures.
 */
describe("dead letters over HTTP", () => {
  const consumer = `tiers-${Date.now()}`;
  const subject = "events.customer.customer.registered";
  let system: Awaited<ReturnType<typeof gatewayAndNotification>>;
  let service: MessageBus;
  let broken = true;
  const handled: string[] = [];

  const call = (
    method: string,
    path: string,
    headers: Record<string, string> = { "x-api-key": OPERATOR_KEY },
  ) => system.gateway.app.request(`/v2${path}`, { method, headers });
  const letters = async () => (await read(await call("GET", `/dead-letters?consumer=${consumer}`))).items;

  beforeAll(async () => {
    system = await gatewayAndNotification();
    service = system.broker.connect("customer");
    service.consume({
      durable: consumer,
      subjects: [subject],
      maxRedeliveryDelayMs: 50,
      deadLetterAfterMs: 300,
      handler: async (event) => {
        if (broken) throw new Error("event store unavailable");
        handled.push(event.id);
      },
    });
  });
  afterAll(async () => {
    await service?.close();
    await system?.stop();
  });

  it("lets only operator API keys in: 401 without or with an unknown key, 403 for tokens", async () => {
    for (const [method, path] of [
      ["GET", "/dead-letters"],
      ["POST", "/dead-letters/1/replay"],
      ["DELETE", "/dead-letters/1"],
    ] as const) {
      const none = await call(method, path, {});
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(await read(none)).toMatchObject({ code: 401, type: "unauthorized" });
      expect((await call(method, path, { "x-api-key": "guess" })).status).toBe(401);
      const client = await system.gateway.tokens.issue(
        { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["read:orders", "write:orders"] },
        60,
      );
      const customer = await system.gateway.tokens.issue(
        { kind: "session", sub: "7", username: "alice", scopes: ["read:cheeses", "read:orders"] },
        60,
      );
      for (const token of [client.token, customer.token]) {
        const refused = await call(method, path, { authorization: `Bearer ${token}` });
        expect(refused.status, `${method} ${path}`).toBe(403);
        expect(await read(refused)).toMatchObject({ code: 403, type: "forbidden" });
      }
    }
  });

  it("lists an event its consumer kept failing, replays it to that consumer once it can succeed (202), handled once", async () => {
    await service.publish({ id: "evt-kept-failing", subject, payload: { customerId: 1 } });
    await service.publish({ id: "evt-discarded", subject, payload: { customerId: 2 } });
    await expect.poll(async () => (await letters()).length, { timeout: 10_000, interval: 50 }).toBe(2);
    const [kept, discarded] = await letters();
    expect(kept).toMatchObject({
      consumer,
      event: { id: "evt-kept-failing", subject, payload: { customerId: 1 } },
      error: "Error: event store unavailable",
    });
    const listed = await call("GET", `/dead-letters?consumer=${consumer}&limit=1`);
    expect(listed.headers.get("cache-control")).toBe("no-store");
    expect(await read(listed)).toMatchObject({
      items: [{ id: kept.id }],
      hasMore: true,
      nextCursor: kept.id,
    });

    broken = false;
    const replayed = await call("POST", `/dead-letters/${kept.id}/replay`);
    expect(replayed.status).toBe(202);
    expect(await read(replayed)).toEqual({ id: kept.id, consumer });
    expect((await call("DELETE", `/dead-letters/${discarded.id}`)).status).toBe(204);
    await expect.poll(() => handled, { timeout: 5_000 }).toEqual(["evt-kept-failing"]);
    expect(await letters()).toEqual([]);

    // Gone: a second replay or delete is a 404; a malformed id or consumer a 400.
    for (const [method, path] of [
      ["POST", `/dead-letters/${kept.id}/replay`],
      ["DELETE", `/dead-letters/${discarded.id}`],
    ] as const) {
      const response = await call(method, path);
      expect(response.status).toBe(404);
      expect(await read(response)).toMatchObject({ code: 404, type: "not_found" });
    }
    for (const path of ["/dead-letters/abc/replay", "/dead-letters/0/replay"]) {
      expect((await call("POST", path)).status).toBe(400);
    }
    for (const query of ["consumer=a.b", "cursor=garbage", "limit=0"]) {
      expect((await call("GET", `/dead-letters?${query}`)).status, query).toBe(400);
    }
    // The event after them went through, and nothing came twice.
    await service.publish({ id: "evt-after", subject, payload: { customerId: 3 } });
    await expect.poll(() => handled).toEqual(["evt-kept-failing", "evt-after"]);
  });
});
