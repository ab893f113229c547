import { address, fakeCatalogue, fakeCustomerVault } from "@cheese/service-testing/stand-ins";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayWith } from "./support/gateway-in-process.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY } from "./support/system.ts";

// The real ordering service behind the gateway, on one in-process bus, with a stand-in catalogue.

/**
 * The order routes and the Idempotency-Key middleware: who sees which order, who may ship, and
 * what a repeated request gets.
 */
describe("order routes", () => {
  let system: Awaited<ReturnType<typeof gatewayWith>>;
  let gateway: typeof system.gateway;
  let catalogue: ReturnType<typeof fakeCatalogue>;
  // Customers' addresses are sealed by the customer service; this stands in for it.
  let vault: ReturnType<typeof fakeCustomerVault>;
  let operator: Record<string, string>;
  const customer = async (id: number) => {
    const { token } = await gateway.tokens.issue(
      {
        kind: "session",
        sub: String(id),
        username: `customer${id}`,
        scopes: ["read:cheeses", "read:orders", "write:orders"],
      },
      3600,
    );
    return { authorization: `Bearer ${token}` };
  };

  beforeAll(async () => {
    system = await gatewayWith({ ordering: { ORDER_AUTO_APPROVE_DELAY: "1h" } }, "5s");
    gateway = system.gateway;
    catalogue = fakeCatalogue(system.broker);
    vault = fakeCustomerVault(system.broker);
    const response = await gateway.app.request("/oauth/token", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${OPERATOR_CLIENT.id}:${OPERATOR_CLIENT.secret}`).toString("base64")}`,
      },
      body: "grant_type=client_credentials",
    });
    operator = {
      authorization: `Bearer ${((await response.json()) as { access_token: string }).access_token}`,
    };
    for (const id of [1, 2, 3]) catalogue.add(id, { pricePerKg: 10 });
  });
  afterAll(async () => {
    await catalogue?.close();
    await vault?.close();
    await system?.stop();
  });

  const request = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    gateway.app.request(`/v2${path}`, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const place = (headers: Record<string, string>, cheeseId = 1, quantity = 1) =>
    request("POST", "/store/order", headers, { items: [{ cheeseId, quantity }], shippingAddress: address });

  describe("visibility", () => {
    it("lets a customer see, list and cancel only its own orders; others' read as 404", async () => {
      const alice = await customer(1001);
      const bob = await customer(1002);
      const placed = await place(alice);
      expect(placed.status).toBe(201);
      const order = (await placed.json()) as { id: number };

      expect((await request("GET", `/store/order/${order.id}`, alice)).status).toBe(200);
      expect((await request("GET", `/store/order/${order.id}`, bob)).status).toBe(404);
      expect((await request("DELETE", `/store/order/${order.id}`, bob)).status).toBe(404);
      expect((await request("GET", `/store/order/${order.id}`, operator)).status).toBe(200);

      const alicesOrders = (await (await request("GET", "/store/orders", alice)).json()) as {
        items: { id: number }[];
        total: number;
      };
      expect(alicesOrders.items.map((o) => o.id)).toEqual([order.id]);
      expect(alicesOrders.total).toBe(1);
      expect(((await (await request("GET", "/store/orders", bob)).json()) as { total: number }).total).toBe(
        0,
      );
      const all = (await (await request("GET", "/store/orders", operator)).json()) as {
        items: { id: number }[];
      };
      expect(all.items.map((o) => o.id)).toContain(order.id);

      expect((await request("DELETE", `/store/order/${order.id}`, alice)).status).toBe(204);
    });

    it("pages a customer's orders newest first with a cursor, each once", async () => {
      const carol = await customer(1006);
      const placed: number[] = [];
      for (let i = 0; i < 5; i++) placed.push(((await (await place(carol)).json()) as { id: number }).id);
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor ? `&cursor=${cursor}` : "";
        const page = (await (await request("GET", `/store/orders?limit=2${query}`, carol)).json()) as {
          items: { id: number }[];
          nextCursor: string | null;
          total: number;
        };
        expect(page.total).toBe(5);
        seen.push(...page.items.map((o) => o.id));
        cursor = page.nextCursor;
      } while (cursor && seen.length <= 5);
      expect(seen).toEqual([...placed].reverse());
    });

    it("lets only operators ship and deliver: operator clients and operator keys", async () => {
      const alice = await customer(1003);
      const order = (await (await place(alice)).json()) as { id: number };
      const shipment = { carrier: "DHL", trackingNumber: "1", estimatedDelivery: "2030-01-01T00:00:00Z" };
      const refused = await request("POST", `/store/order/${order.id}/ship`, alice, shipment);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 403, type: "forbidden" });
      expect((await request("POST", `/store/order/${order.id}/deliver`, alice)).status).toBe(403);
      // Refused for who it is, before the body is looked at.
      expect((await request("POST", `/store/order/${order.id}/ship`, alice, {})).status).toBe(403);
      // The operator client gets through to the order, which is not approved yet; so does an
      // operator key, and the decider agrees with the gateway.
      expect((await request("POST", `/store/order/${order.id}/ship`, operator, shipment)).status).toBe(409);
      const operatorKey = { "x-api-key": OPERATOR_KEY };
      expect((await request("POST", `/store/order/${order.id}/ship`, operatorKey, shipment)).status).toBe(
        409,
      );
      expect((await request("POST", `/store/order/${order.id}/deliver`, operatorKey)).status).toBe(409);
    });
  });

  describe("as of a moment", () => {
    it("answers the order as it was then, to whoever may read it now, redacted once its customer is erased", async () => {
      const dave = await customer(1010);
      const order = (await (await place(dave)).json()) as { id: number };
      const history = await request("GET", `/store/order/${order.id}/history`, dave);
      const [placed] = ((await history.json()) as { items: { at: string }[] }).items;
      // The cancellation is recorded after the placement, not in the same millisecond.
      await expect.poll(() => Date.now()).toBeGreaterThan(Date.parse(placed!.at));
      expect((await request("DELETE", `/store/order/${order.id}`, dave)).status).toBe(204);
      const asOf = (at: string, headers: Record<string, string>) =>
        request("GET", `/store/order/${order.id}?asOf=${encodeURIComponent(at)}`, headers);

      const then = await asOf(placed!.at, dave);
      expect(then.status).toBe(200);
      expect(then.headers.get("x-cheese-as-of")).toBe(placed!.at);
      expect(then.headers.get("cache-control")).toContain("no-store");
      expect(await then.json()).toMatchObject({ id: order.id, status: "placed", shippingAddress: address });
      const now = (await (await asOf(new Date().toISOString(), dave)).json()) as { status: string };
      expect(now.status).toBe("cancelled");
      expect((await asOf(new Date(Date.parse(placed!.at) - 1).toISOString(), dave)).status).toBe(404);
      expect((await asOf(placed!.at, await customer(1011))).status).toBe(404);
      expect((await asOf(placed!.at, operator)).status).toBe(200);

      vault.erase(1010);
      expect(await (await asOf(placed!.at, operator)).json()).toMatchObject({
        status: "placed",
        notes: null,
        shippingAddress: { street: "[erased]", city: "[erased]", country: address.country },
      });
    });
  });

  describe("Idempotency-Key", () => {
    const withKey = (headers: Record<string, string>, key: string) => ({
      ...headers,
      "idempotency-key": key,
    });
    const orderTotal = async () =>
      ((await (await request("GET", "/store/orders?limit=1", operator)).json()) as { total: number }).total;

    it("answers a repeat with the first response, and places nothing more", async () => {
      const before = await orderTotal();
      const first = await place(withKey(operator, "repeat-1"), 2, 3);
      expect(first.status).toBe(201);
      const firstBody = await first.text();
      const again = await place(withKey(operator, "repeat-1"), 2, 3);
      expect(again.status).toBe(201);
      expect(await again.text()).toBe(firstBody);
      expect(again.headers.get("location")).toBe(first.headers.get("location"));
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await orderTotal()).toBe(before + 1);
    });

    it("makes one order of many concurrent repeats", async () => {
      const before = await orderTotal();
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => place(withKey(operator, "concurrent-1"), 3, 2)),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(new Set(await Promise.all(responses.map((r) => r.text()))).size).toBe(1);
      expect(await orderTotal()).toBe(before + 1);
    });

    it("refuses the same key with a different body (409), but not the same JSON written differently", async () => {
      expect((await place(withKey(operator, "body-1"), 1, 1)).status).toBe(201);
      const different = await place(withKey(operator, "body-1"), 1, 2);
      expect(different.status).toBe(409);
      expect(await different.json()).toMatchObject({ code: 409, type: "conflict" });
      const reordered = await gateway.app.request("/v2/store/order", {
        method: "POST",
        headers: { "content-type": "application/json", ...withKey(operator, "body-1") },
        body: `{ "shippingAddress": ${JSON.stringify(address)}, "items": [{"quantity": 1, "cheeseId": 1}] }`,
      });
      expect(reordered.status).toBe(201);
    });

    it("keeps keys of different callers apart", async () => {
      const before = await orderTotal();
      const alice = await customer(1004);
      const bob = await customer(1005);
      const a = (await (await place(withKey(alice, "shared-key"))).json()) as { id: number };
      const b = (await (await place(withKey(bob, "shared-key"))).json()) as { id: number };
      expect(a.id).not.toBe(b.id);
      expect(await orderTotal()).toBe(before + 2);
    });

    it("keeps keys apart for customers who act through the same OAuth client", async () => {
      // Tokens a customer granted to a client: the caller (rate limits) is the client, but each
      // customer's idempotency keys are its own.
      const viaClient = async (id: number) => {
        const { token } = await gateway.tokens.issue(
          {
            kind: "user",
            sub: String(id),
            username: `customer${id}`,
            clientId: OPERATOR_CLIENT.id,
            scopes: ["read:orders", "write:orders"],
          },
          3600,
        );
        return { authorization: `Bearer ${token}` };
      };
      const alice = await viaClient(1006);
      const bob = await viaClient(1007);
      const a = await place(withKey(alice, "same-client-key"));
      const b = await place(withKey(bob, "same-client-key"));
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.headers.get("idempotent-replayed")).toBeNull();
      const bobsOrder = (await b.json()) as { id: number };
      expect(bobsOrder.id).not.toBe(((await a.json()) as { id: number }).id);
      expect((await request("GET", `/store/order/${bobsOrder.id}`, bob)).status).toBe(200);
    });

    it("replays a refusal too, and refuses a malformed key with 400", async () => {
      const first = await place(withKey(operator, "refused-1"), 999);
      expect(first.status).toBe(422);
      catalogue.add(999);
      const again = await place(withKey(operator, "refused-1"), 999);
      expect(again.status).toBe(422);
      expect(await again.json()).toEqual(await first.json());

      expect((await place(withKey(operator, "x".repeat(256)))).status).toBe(400);
      expect((await place(withKey(operator, "has space"))).status).toBe(400);
    });

    it("is not consulted without credentials: 401 comes first", async () => {
      const response = await place(withKey({}, "anonymous-1"));
      expect(response.status).toBe(401);
    });
  });
});
