import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, operatorToken } from "./support/credentials.ts";
import {
  address,
  createCheese,
  type Headers,
  http,
  orderBody,
  registerCustomer,
  waitForStatus,
} from "./support/orders.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * Orders over HTTP with ORDER_AUTO_APPROVE_DELAY=0s: placement and its checks, the asynchronous
 * approval, fulfilment, cancellation, listing and who sees what.
 */
describe("orders", () => {
  let system: RunningSystem;
  let operator: { apiKey: Headers; bearer: Headers };
  let api: ReturnType<typeof http>;
  beforeAll(async () => {
    system = await startSystem({ env: { ORDER_AUTO_APPROVE_DELAY: "0s" } });
    operator = await operatorHeaders(system);
    api = http(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const place = (body: unknown, headers: Headers = operator.bearer) =>
    api.post("/store/order", body, headers);
  const orderCount = async () => (await json(await api.get("/store/orders?limit=1", operator.apiKey))).total;

  describe("placement", () => {
    it("places an order: 201, Location, prices fixed from the catalogue, total exact to the cent", async () => {
      const a = await createCheese(system, operator.bearer, { pricePerKg: 0.1 });
      const b = await createCheese(system, operator.bearer, { pricePerKg: 0.2 });
      const response = await place(
        orderBody(
          [
            { cheeseId: a.id, quantity: 3 },
            { cheeseId: b.id, quantity: 3 },
          ],
          { notes: "leave with the neighbour" },
        ),
      );
      expect(response.status).toBe(201);
      const order = await json(response);
      expect(response.headers.get("location")).toBe(`${system.baseUrl}/store/order/${order.id}`);
      expect(order).toMatchObject({
        status: "placed",
        items: [
          { cheeseId: a.id, cheeseName: a.name, quantity: 3, pricePerKg: 0.1 },
          { cheeseId: b.id, cheeseName: b.name, quantity: 3, pricePerKg: 0.2 },
        ],
        shippingAddress: address,
        notes: "leave with the neighbour",
        shipDate: null,
      });
      // 0.1 × 3 + 0.2 × 3 in floating point is 0.9000000000000001.
      expect(order.total).toBe(0.9);
      expect(Number.isSafeInteger(order.id) && order.id > 0).toBe(true);
      expect(Date.parse(order.createdAt)).not.toBeNaN();

      // The asynchronous check approves it; the placement price stays.
      const approved = await waitForStatus(system, order.id, "approved", operator.apiKey);
      expect(approved.items).toEqual(order.items);
      expect(approved.total).toBe(0.9);
    });

    it("finds the order on a GET right after the 201, every time", async () => {
      const cheese = await createCheese(system, operator.bearer);
      for (let i = 0; i < 10; i++) {
        const order = await json(await place(orderBody([{ cheeseId: cheese.id, quantity: 1 }])));
        const read = await api.get(`/store/order/${order.id}`, operator.apiKey);
        expect(read.status).toBe(200);
        expect((await json(read)).id).toBe(order.id);
      }
    });

    it("refuses lines whose cheese is missing, not available or has no price with 422 naming the line", async () => {
      const good = await createCheese(system, operator.bearer);
      const pending = await createCheese(system, operator.bearer, { status: "pending" });
      const sold = await createCheese(system, operator.bearer, { status: "sold" });
      const priceless = await createCheese(system, operator.bearer, { pricePerKg: undefined });
      const before = await orderCount();
      const response = await place(
        orderBody([
          { cheeseId: good.id, quantity: 1 },
          { cheeseId: 987_654_321, quantity: 1 },
          { cheeseId: pending.id, quantity: 1 },
          { cheeseId: sold.id, quantity: 1 },
          { cheeseId: priceless.id, quantity: 1 },
        ]),
      );
      expect(response.status).toBe(422);
      const body = await json(response);
      expect(body).toMatchObject({ code: 422, type: "validation_error" });
      expect(body.errors.map((e: { field: string }) => e.field)).toEqual([
        "items[1].cheeseId",
        "items[2].cheeseId",
        "items[3].cheeseId",
        "items[4].cheeseId",
      ]);
      expect(await orderCount()).toBe(before);
    });

    it("refuses bad bodies with 422 naming the field", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const line = { cheeseId: cheese.id, quantity: 1 };
      const cases: [unknown, string][] = [
        [{ items: [], shippingAddress: address }, "items"],
        [orderBody(Array.from({ length: 51 }, (_, i) => ({ cheeseId: i + 1, quantity: 1 }))), "items"],
        [orderBody([{ cheeseId: cheese.id, quantity: 0 }]), "items[0].quantity"],
        [orderBody([{ cheeseId: cheese.id, quantity: 101 }]), "items[0].quantity"],
        [orderBody([{ cheeseId: cheese.id, quantity: 1.5 }]), "items[0].quantity"],
        [orderBody([line, { cheeseId: cheese.id, quantity: 2 }]), "items[1].cheeseId"],
        [orderBody([{ cheeseId: 0, quantity: 1 }]), "items[0].cheeseId"],
        [{ items: [line] }, "shippingAddress"],
        [{ items: [line], shippingAddress: { ...address, country: "XX" } }, "shippingAddress.country"],
        [{ items: [line], shippingAddress: { ...address, street: "" } }, "shippingAddress.street"],
        [orderBody([line], { status: "approved" }), "status"],
        [orderBody([line], { notes: 42 }), "notes"],
      ];
      const before = await orderCount();
      for (const [body, field] of cases) {
        const response = await place(body);
        expect(response.status, field).toBe(422);
        const error = await json(response);
        expect(error.type).toBe("validation_error");
        expect(
          error.errors.map((e: { field: string }) => e.field),
          JSON.stringify(body).slice(0, 80),
        ).toContain(field);
      }
      expect((await place("{not json")).status).toBe(422);
      expect(await orderCount()).toBe(before);
    });

    it("accepts exactly 50 lines and a quantity of 100, ignoring read-only fields", async () => {
      const cheeses = await Promise.all(
        Array.from({ length: 50 }, () => createCheese(system, operator.bearer, { pricePerKg: 1.01 })),
      );
      const lines = cheeses.map((cheese) => ({ cheeseId: cheese.id, quantity: 100 }));
      const response = await place(orderBody(lines, { id: 1, createdAt: "yesterday" }));
      expect(response.status).toBe(201);
      const order = await json(response);
      expect(order.items).toHaveLength(50);
      expect(order.total).toBe(5050);
      expect(order.createdAt).not.toBe("yesterday");
    });

    it("needs write:orders: 401 without credentials, 403 with an API key or a read-only token", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const body = orderBody([{ cheeseId: cheese.id, quantity: 1 }]);
      const anonymous = await place(body, {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toBeTruthy();
      expect((await place(body, operator.apiKey)).status).toBe(403);
      const readOnly = await operatorToken(system, "read:orders");
      expect((await place(body, { authorization: `Bearer ${readOnly}` })).status).toBe(403);
    });
  });

  describe("Idempotency-Key", () => {
    const keyed = (key: string, headers: Headers = operator.bearer) => ({
      ...headers,
      "idempotency-key": key,
    });

    it("answers a repeat with the first response and places nothing more; another body is 409", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const key = `retry-${randomUUID()}`;
      const body = orderBody([{ cheeseId: cheese.id, quantity: 4 }]);
      const before = await orderCount();
      const first = await place(body, keyed(key));
      expect(first.status).toBe(201);
      const firstBody = await first.text();
      await waitForStatus(system, JSON.parse(firstBody).id, "approved", operator.apiKey);

      const repeat = await place(body, keyed(key));
      expect(repeat.status).toBe(201);
      expect(await repeat.text()).toBe(firstBody); // the first response, though the order moved on
      expect(repeat.headers.get("location")).toBe(first.headers.get("location"));
      expect(await orderCount()).toBe(before + 1);

      const other = await place(orderBody([{ cheeseId: cheese.id, quantity: 5 }]), keyed(key));
      expect(other.status).toBe(409);
      expect(await json(other)).toMatchObject({ code: 409, type: "conflict" });
      expect(await orderCount()).toBe(before + 1);
    });

    it("makes one order of ten concurrent requests with one key", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const key = `burst-${randomUUID()}`;
      const before = await orderCount();
      const responses = await Promise.all(
        Array.from({ length: 10 }, () =>
          place(orderBody([{ cheeseId: cheese.id, quantity: 1 }]), keyed(key)),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(new Set(await Promise.all(responses.map((r) => r.text()))).size).toBe(1);
      expect(await orderCount()).toBe(before + 1);
    });

    it("keeps the same key of two customers apart", async () => {
      const alice = await registerCustomer(system);
      const bob = await registerCustomer(system);
      const cheese = await createCheese(system, operator.bearer);
      const body = orderBody([{ cheeseId: cheese.id, quantity: 1 }]);
      const a = await json(await place(body, keyed("my-first-order", alice.bearer)));
      const b = await json(await place(body, keyed("my-first-order", bob.bearer)));
      expect(a.id).not.toBe(b.id);
      expect((await api.get(`/store/order/${b.id}`, bob.bearer)).status).toBe(200);
    });

    it("refuses a malformed key with 400", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const response = await place(orderBody([{ cheeseId: cheese.id, quantity: 1 }]), keyed("x".repeat(300)));
      expect(response.status).toBe(400);
      expect((await json(response)).type).toBe("bad_request");
    });
  });

  describe("fulfilment and cancellation", () => {
    const approvedOrder = async (pricePerKg = 25) => {
      const cheese = await createCheese(system, operator.bearer, { pricePerKg });
      const placed = await json(await place(orderBody([{ cheeseId: cheese.id, quantity: 2 }])));
      return { cheese, order: await waitForStatus(system, placed.id, "approved", operator.apiKey) };
    };
    const shipment = {
      carrier: "Royal Mail",
      trackingNumber: "RM123456789GB",
      estimatedDelivery: "2030-01-02T10:00:00Z",
    };

    it("ships an approved order, then delivers it; every other move is 409", async () => {
      const { order } = await approvedOrder();
      expect((await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer)).status).toBe(409);

      const shipped = await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer);
      expect(shipped.status).toBe(200);
      const shippedOrder = await json(shipped);
      expect(shippedOrder.status).toBe("shipped");
      expect(Date.parse(shippedOrder.shipDate)).not.toBeNaN();
      expect((await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer)).status).toBe(409);
      expect((await api.delete(`/store/order/${order.id}`, operator.bearer)).status).toBe(409);

      const delivered = await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer);
      expect(delivered.status).toBe(200);
      expect(await json(delivered)).toMatchObject({ status: "delivered", shipDate: shippedOrder.shipDate });
      expect((await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer)).status).toBe(409);
      expect((await api.delete(`/store/order/${order.id}`, operator.bearer)).status).toBe(409);
      expect((await json(await api.get(`/store/order/${order.id}`, operator.apiKey))).status).toBe(
        "delivered",
      );
    });

    it("checks the shipment body and the order id", async () => {
      const { order } = await approvedOrder();
      const missing = await api.post(`/store/order/${order.id}/ship`, { carrier: "DHL" }, operator.bearer);
      expect(missing.status).toBe(422);
      expect((await json(missing)).errors.map((e: { field: string }) => e.field).sort()).toEqual([
        "estimatedDelivery",
        "trackingNumber",
      ]);
      const badDate = await api.post(
        `/store/order/${order.id}/ship`,
        { ...shipment, estimatedDelivery: "next tuesday" },
        operator.bearer,
      );
      expect(badDate.status).toBe(422);
      expect((await api.post("/store/order/987654321/ship", shipment, operator.bearer)).status).toBe(404);
      expect((await api.post("/store/order/abc/deliver", {}, operator.bearer)).status).toBe(400);
      expect((await json(await api.get(`/store/order/${order.id}`, operator.apiKey))).status).toBe(
        "approved",
      );
    });

    it("cancels an approved order with 204, and again with 204; a missing order is 404", async () => {
      const { order } = await approvedOrder();
      expect((await api.delete(`/store/order/${order.id}`, operator.bearer)).status).toBe(204);
      expect((await json(await api.get(`/store/order/${order.id}`, operator.apiKey))).status).toBe(
        "cancelled",
      );
      expect((await api.delete(`/store/order/${order.id}`, operator.bearer)).status).toBe(204);
      expect((await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer)).status).toBe(409);
      expect((await api.delete("/store/order/987654321", operator.bearer)).status).toBe(404);
      expect((await api.delete("/store/order/0", operator.bearer)).status).toBe(400);
    });
  });

  describe("listing", () => {
    it("pages through orders newest first with a cursor, without repeats, and filters by status", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await json(await place(orderBody([{ cheeseId: cheese.id, quantity: 1 }])))).id);
      }
      const total = await orderCount();
      const seen: number[] = [];
      const times: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
        const response = await api.get(`/store/orders${query}`, operator.apiKey);
        expect(response.status).toBe(200);
        const page = await json(response);
        expect(page.total).toBe(total);
        expect(response.headers.get("x-total-count")).toBe(String(total));
        expect(page.items.length).toBeLessThanOrEqual(2);
        expect(page.hasMore).toBe(page.nextCursor !== null);
        if (page.hasMore) expect(response.headers.get("link")).toContain('rel="next"');
        seen.push(...page.items.map((o: { id: number }) => o.id));
        times.push(...page.items.map((o: { createdAt: string }) => o.createdAt));
        cursor = page.nextCursor;
        pages++;
      } while (cursor && pages < 1000);
      expect(seen).toHaveLength(total);
      expect(new Set(seen).size).toBe(total);
      expect([...times].sort().reverse()).toEqual(times); // newest first
      expect(seen).toEqual(expect.arrayContaining(ids));

      await waitForStatus(system, ids[0]!, "approved", operator.apiKey);
      await api.delete(`/store/order/${ids[0]}`, operator.bearer);
      const cancelled = await json(
        await api.get("/store/orders?status=cancelled&limit=100", operator.apiKey),
      );
      expect(cancelled.items.map((o: { id: number }) => o.id)).toContain(ids[0]);
      expect(cancelled.items.every((o: { status: string }) => o.status === "cancelled")).toBe(true);
    });

    it("answers malformed list parameters with 400", async () => {
      for (const query of ["limit=0", "limit=500", "limit=abc", "cursor=not-a-cursor", "status=lost"]) {
        const response = await api.get(`/store/orders?${query}`, operator.apiKey);
        expect(response.status, query).toBe(400);
        expect((await json(response)).type).toBe("bad_request");
      }
    });

    it("reads orders with an API key, a read:orders token or a customer token, and not without", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const order = await json(await place(orderBody([{ cheeseId: cheese.id, quantity: 1 }])));
      const reader = { authorization: `Bearer ${await operatorToken(system, "read:orders")}` };
      expect((await api.get(`/store/order/${order.id}`, reader)).status).toBe(200);
      const cheesesOnly = { authorization: `Bearer ${await operatorToken(system, "read:cheeses")}` };
      expect((await api.get(`/store/order/${order.id}`, cheesesOnly)).status).toBe(403);
      expect((await api.get(`/store/order/${order.id}`, {})).status).toBe(401);
      expect((await api.get("/store/order/987654321", operator.apiKey)).status).toBe(404);
    });
  });

  describe("customers", () => {
    it("a customer places orders with its login token and sees and cancels only its own", async () => {
      const alice = await registerCustomer(system);
      const bob = await registerCustomer(system);
      const cheese = await createCheese(system, operator.bearer);
      const placed = await place(orderBody([{ cheeseId: cheese.id, quantity: 2 }]), alice.bearer);
      expect(placed.status).toBe(201);
      const order = await json(placed);

      expect((await api.get(`/store/order/${order.id}`, alice.bearer)).status).toBe(200);
      const foreign = await api.get(`/store/order/${order.id}`, bob.bearer);
      expect(foreign.status).toBe(404);
      expect((await json(foreign)).type).toBe("not_found");
      expect((await api.delete(`/store/order/${order.id}`, bob.bearer)).status).toBe(404);
      expect((await api.get(`/store/order/${order.id}`, operator.apiKey)).status).toBe(200);

      const alicesList = await json(await api.get("/store/orders", alice.bearer));
      expect(alicesList.items.map((o: { id: number }) => o.id)).toEqual([order.id]);
      expect(alicesList.total).toBe(1);
      expect((await json(await api.get("/store/orders", bob.bearer))).total).toBe(0);

      expect((await api.delete(`/store/order/${order.id}`, alice.bearer)).status).toBe(204);
      expect((await json(await api.get(`/store/order/${order.id}`, alice.bearer))).status).toBe("cancelled");
    });

    it("customers may not ship or deliver", async () => {
      const alice = await registerCustomer(system);
      const cheese = await createCheese(system, operator.bearer);
      const order = await json(await place(orderBody([{ cheeseId: cheese.id, quantity: 1 }]), alice.bearer));
      await waitForStatus(system, order.id, "approved", alice.bearer);
      const shipment = { carrier: "DHL", trackingNumber: "1", estimatedDelivery: "2030-01-01T00:00:00Z" };
      expect((await api.post(`/store/order/${order.id}/ship`, shipment, alice.bearer)).status).toBe(403);
      expect((await api.post(`/store/order/${order.id}/deliver`, {}, alice.bearer)).status).toBe(403);
    });

    it("delivered orders worth $600 make the customer gold", async () => {
      const alice = await registerCustomer(system);
      const status = async () =>
        (await json(await api.get(`/customer/${alice.username}`, alice.bearer))).customerStatus;
      expect(await status()).toBe("bronze");
      const cheese = await createCheese(system, operator.bearer, { pricePerKg: 100 });
      for (const quantity of [1, 5]) {
        const order = await json(await place(orderBody([{ cheeseId: cheese.id, quantity }]), alice.bearer));
        await waitForStatus(system, order.id, "approved", operator.apiKey);
        const shipment = {
          carrier: "DHL",
          trackingNumber: `T${order.id}`,
          estimatedDelivery: "2030-01-01T00:00:00Z",
        };
        expect((await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer)).status).toBe(200);
        expect((await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer)).status).toBe(200);
        if (quantity === 1) await expect.poll(status).toBe("silver");
      }
      await expect.poll(status).toBe("gold");
    });
  });

  describe("cheese deletion", () => {
    it("refuses to delete a cheese with an approved order (409) and changes nothing", async () => {
      const cheese = await createCheese(system, operator.bearer);
      const order = await json(await place(orderBody([{ cheeseId: cheese.id, quantity: 1 }])));
      await waitForStatus(system, order.id, "approved", operator.apiKey);
      const refused = await api.delete(`/cheeses/${cheese.id}`, {
        ...operator.bearer,
        "x-confirm-delete": "true",
      });
      expect(refused.status).toBe(409);
      expect((await json(refused)).type).toBe("conflict");
      expect((await api.get(`/cheeses/${cheese.id}`, operator.apiKey)).status).toBe(200);
      expect((await json(await api.get(`/store/order/${order.id}`, operator.apiKey))).status).toBe(
        "approved",
      );

      const shipment = { carrier: "DHL", trackingNumber: "1", estimatedDelivery: "2030-01-01T00:00:00Z" };
      await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer);
      const stillRefused = await api.delete(`/cheeses/${cheese.id}`, {
        ...operator.bearer,
        "x-confirm-delete": "true",
      });
      expect(stillRefused.status).toBe(409);

      // Once delivered the order no longer holds the cheese.
      await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer);
      const deleted = await api.delete(`/cheeses/${cheese.id}`, {
        ...operator.bearer,
        "x-confirm-delete": "true",
      });
      expect(deleted.status).toBe(204);
      expect((await json(await api.get(`/store/order/${order.id}`, operator.apiKey))).status).toBe(
        "delivered",
      );
    });
  });
});
