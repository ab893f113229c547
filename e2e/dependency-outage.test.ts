import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type EventStoreDbStandIn,
  startEventStoreDbStandIn,
} from "../packages/event-store/test/stand-in/eventstoredb.ts";
import { operatorHeaders } from "./support/credentials.ts";
import { createCheese, type Headers, http } from "./support/orders.ts";
import { json, launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * The event store goes away under a running system (pnpm start against the EventStoreDB stand-in,
 * the production adapter and client unchanged) and comes back: meanwhile a request that needs it
 * answers 503 with Retry-After and the spec's error body, never 500 or a hang; afterwards the
 * services answer again by themselves, with nothing restarted.
 */
describe.skipIf(launcherOnly("an in-process EventStoreDB stand-in"))("an event store outage", () => {
  let eventStore: EventStoreDbStandIn;
  let system: RunningSystem;
  let operator: { apiKey: Headers; bearer: Headers };

  beforeAll(async () => {
    eventStore = await startEventStoreDbStandIn();
    system = await startSystem({ env: { EVENTSTORE_URL: eventStore.connectionString } });
    operator = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await eventStore?.close();
  });

  const newCheese = () =>
    http(system).post("/cheeses", { name: `Cheese ${randomUUID()}`, pricePerKg: 20 }, operator.bearer);

  it("answers 503 with Retry-After while the event store is away, and serves again once it is back", async () => {
    const before = await createCheese(system, operator.bearer);
    await eventStore.goAway();
    try {
      for (const response of [
        await newCheese(),
        await http(system).get(`/cheeses/${before.id}`, operator.apiKey),
      ]) {
        expect(response.status).toBe(503);
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
        const body = await json(response);
        expect(body).toMatchObject({ code: 503, type: "service_unavailable" });
        expect(typeof body.message).toBe("string");
      }
    } finally {
      await eventStore.comeBack();
    }
    await expect.poll(async () => (await newCheese()).status, { timeout: 20_000 }).toBe(201);
    const read = await http(system).get(`/cheeses/${before.id}`, operator.apiKey);
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({ id: before.id, name: before.name });
  });
});
