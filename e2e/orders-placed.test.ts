import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { createCheese, type Headers, http, orderBody, waitForStatus } from "./support/orders.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * Orders that stay `placed` (ORDER_AUTO_APPROVE_DELAY=1h): what may and may not happen to them,
 * and how deleting a cheese cancels them. That they stay placed until the delay has passed, and
 * are approved then, is shown on a manual clock in services/ordering/test/order-handlers.test.ts.
 */
describe("placed orders", () => {
  let system: RunningSystem;
  let operator: { apiKey: Headers; bearer: Headers };
  let api: ReturnType<typeof http>;
  beforeAll(async () => {
    system = await startSystem({ env: { ORDER_AUTO_APPROVE_DELAY: "1h" } });
    operator = await operatorHeaders(system);
    api = http(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const placeFor = async (cheeseId: number) => {
    const response = await api.post("/store/order", orderBody([{ cheeseId, quantity: 1 }]), operator.bearer);
    expect(response.status).toBe(201);
    return json(response);
  };
  const statusOf = async (orderId: number) =>
    (await json(await api.get(`/store/order/${orderId}`, operator.apiKey))).status;
  const shipment = { carrier: "DHL", trackingNumber: "JD0001", estimatedDelivery: "2030-01-01T00:00:00Z" };

  it("cannot be shipped or delivered before it is approved (409)", async () => {
    const cheese = await createCheese(system, operator.bearer);
    const order = await placeFor(cheese.id);
    const ship = await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer);
    expect(ship.status).toBe(409);
    expect(await json(ship)).toMatchObject({ code: 409, type: "conflict" });
    expect((await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer)).status).toBe(409);
    expect(await statusOf(order.id)).toBe("placed");
  });

  it("is cancelled by DELETE with 204, and a second DELETE is 204 too", async () => {
    const cheese = await createCheese(system, operator.bearer);
    const order = await placeFor(cheese.id);
    expect((await api.delete(`/store/order/${order.id}`, operator.bearer)).status).toBe(204);
    expect(await statusOf(order.id)).toBe("cancelled");
    expect((await api.delete(`/store/order/${order.id}`, operator.bearer)).status).toBe(204);
    expect(await statusOf(order.id)).toBe("cancelled");
  });

  it("deleting a cheese with only placed orders succeeds and cancels exactly those orders", async () => {
    const doomed = await createCheese(system, operator.bearer);
    const kept = await createCheese(system, operator.bearer);
    const first = await placeFor(doomed.id);
    const second = await placeFor(doomed.id);
    const other = await placeFor(kept.id);
    const both = await json(
      await api.post(
        "/store/order",
        orderBody([
          { cheeseId: kept.id, quantity: 1 },
          { cheeseId: doomed.id, quantity: 2 },
        ]),
        operator.bearer,
      ),
    );

    const deleted = await api.delete(`/cheeses/${doomed.id}`, {
      ...operator.bearer,
      "x-confirm-delete": "true",
    });
    expect(deleted.status).toBe(204);
    expect((await api.get(`/cheeses/${doomed.id}`, operator.apiKey)).status).toBe(404);

    for (const order of [first, second, both]) {
      await waitForStatus(system, order.id, "cancelled", operator.apiKey, 10_000);
    }
    expect(await statusOf(other.id)).toBe("placed");
    // An order of the deleted cheese can no longer be placed.
    const late = await api.post(
      "/store/order",
      orderBody([{ cheeseId: doomed.id, quantity: 1 }]),
      operator.bearer,
    );
    expect(late.status).toBe(422);
    expect((await json(late)).errors).toEqual([{ field: "items[0].cheeseId", message: expect.any(String) }]);
  });
});
