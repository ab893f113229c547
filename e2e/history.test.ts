import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { address, createCheese, http, orderBody, waitForStatus } from "./support/orders.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * GET .../history on the running system: what happened to a cheese, an order or one's own
 * account, and when, as `{type, at, data}` pages, with public facts only.
 */
describe("history of cheeses, orders and accounts", () => {
  let system: RunningSystem;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  let alice: TestCustomer;
  let bob: TestCustomer;

  beforeAll(async () => {
    system = await startSystem({ env: { ORDER_AUTO_APPROVE_DELAY: "0s" } });
    auth = await operatorHeaders(system);
    alice = await registerAndLogin(system, { firstName: "Alice", phone: "+44 1234 567890" });
    bob = await registerAndLogin(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const get = (path: string, headers: Record<string, string>) => http(system).get(path, headers);
  /** Every entry of a history, following nextCursor page by page. */
  const allPages = async (path: string, headers: Record<string, string>, limit: number) => {
    // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
    const items: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const response = await get(`${path}${query}`, headers);
      expect(response.status).toBe(200);
      const page = await json(response);
      expect(page.items.length).toBeLessThanOrEqual(limit);
      expect(page.hasMore).toBe(page.nextCursor !== null);
      items.push(...page.items);
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    return { items, pages };
  };

  it("shows what happened to a cheese, oldest first, to callers who may read cheeses", async () => {
    const cheese = await createCheese(system, auth.bearer, { origin: "FR", pricePerKg: 31 });
    const moved = await http(system).post(`/cheeses/${cheese.id}?status=sold`, {}, auth.bearer);
    expect(moved.status).toBe(200);

    const response = await get(`/cheeses/${cheese.id}/history`, auth.apiKey);
    expect(response.status).toBe(200);
    const page = await json(response);
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).toBeNull();
    expect(page.items[0]).toMatchObject({ type: "cheese.added", data: { id: cheese.id, name: cheese.name } });
    expect(page.items).toContainEqual(
      expect.objectContaining({ type: "cheese.status_changed", data: { from: "available", to: "sold" } }),
    );
    const times = page.items.map((entry: { at: string }) => Date.parse(entry.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const entry of page.items) expect(Object.keys(entry).sort()).toEqual(["at", "data", "type"]);

    // A customer's bearer token reads cheeses, so it reads their history too.
    expect((await get(`/cheeses/${cheese.id}/history`, alice.bearer)).status).toBe(200);
    expect((await get(`/cheeses/${cheese.id}/history`, {})).status).toBe(401);
    expect((await get("/cheeses/987654321/history", auth.apiKey)).status).toBe(404);

    // Deleted, its history stays readable and says so last.
    expect(
      (await http(system).delete(`/cheeses/${cheese.id}`, { ...auth.bearer, "x-confirm-delete": "true" }))
        .status,
    ).toBe(204);
    const after = await json(await get(`/cheeses/${cheese.id}/history`, auth.apiKey));
    expect(after.items.at(-1)).toMatchObject({ type: "cheese.deleted", data: {} });
  });

  it("pages a history with the cursor convention of every list", async () => {
    const cheese = await createCheese(system, auth.bearer);
    for (const status of ["pending", "sold", "available", "sold"]) {
      expect(
        (await http(system).post(`/cheeses/${cheese.id}?status=${status}`, {}, auth.bearer)).status,
      ).toBe(200);
    }
    const whole = await json(await get(`/cheeses/${cheese.id}/history?limit=100`, auth.apiKey));
    const paged = await allPages(`/cheeses/${cheese.id}/history`, auth.apiKey, 2);
    expect(paged.items).toEqual(whole.items);
    expect(paged.pages).toBe(Math.ceil(whole.items.length / 2));
    expect(whole.items.filter((e: { type: string }) => e.type === "cheese.status_changed")).toHaveLength(4);

    for (const query of ["?limit=0", "?limit=101", "?cursor=not-a-cursor", "?limit=abc"]) {
      const refused = await get(`/cheeses/${cheese.id}/history${query}`, auth.apiKey);
      expect(refused.status, query).toBe(400);
      expect((await json(refused)).code).toBe(400);
    }
  });

  it("shows an order's history to its customer and to operators, without the shipping address", async () => {
    const cheese = await createCheese(system, auth.bearer, { pricePerKg: 12.5 });
    const placed = await http(system).post(
      "/store/order",
      orderBody([{ cheeseId: cheese.id, quantity: 2 }], { notes: "ring twice, ask for Alice" }),
      alice.bearer,
    );
    expect(placed.status).toBe(201);
    const order = await json(placed);
    await waitForStatus(system, order.id, "approved", alice.bearer);
    const shipped = await http(system).post(
      `/store/order/${order.id}/ship`,
      { carrier: "UPS", trackingNumber: "1Z999AA10123456784", estimatedDelivery: "2026-12-01T00:00:00Z" },
      auth.bearer,
    );
    expect(shipped.status).toBe(200);

    const response = await get(`/store/order/${order.id}/history`, alice.bearer);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(address.street);
    expect(text).not.toContain("ring twice");
    const { items } = JSON.parse(text);
    expect(items.map((entry: { type: string }) => entry.type)).toEqual([
      "order.placed",
      "order.approved",
      "order.shipped",
    ]);
    expect(items[0].data).toEqual({
      status: "placed",
      items: [{ cheeseId: cheese.id, cheeseName: cheese.name, quantity: 2, pricePerKg: 12.5 }],
      total: 25,
    });
    expect(items[2].data).toEqual({
      status: "shipped",
      carrier: "UPS",
      trackingNumber: "1Z999AA10123456784",
      estimatedDelivery: "2026-12-01T00:00:00Z",
    });

    expect(await json(await get(`/store/order/${order.id}/history`, auth.apiKey))).toEqual({
      items,
      nextCursor: null,
      hasMore: false,
    });
    expect((await get(`/store/order/${order.id}/history`, auth.bearer)).status).toBe(200);
    // Someone else's order does not exist for them, as the order itself does not.
    expect((await get(`/store/order/${order.id}/history`, bob.bearer)).status).toBe(404);
    expect((await get("/store/order/987654321/history", auth.apiKey)).status).toBe(404);
    expect((await get(`/store/order/${order.id}/history`, {})).status).toBe(401);
  });

  it("shows a customer their own account's history, with their personal data, to them only", async () => {
    const issued = await http(system).post(`/customer/${alice.username}/apiKeys`, undefined, alice.bearer);
    expect(issued.status).toBe(201);
    const key = await json(issued);

    const response = await get(`/customer/${alice.username}/history`, alice.bearer);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toMatch(/keyHash|passwordHash|argon2/);
    expect(text).not.toContain(alice.password);
    const { items } = JSON.parse(text);
    expect(items[0]).toMatchObject({
      type: "customer.registered",
      data: { username: alice.username, firstName: "Alice", email: alice.email, phone: "+44 1234 567890" },
    });
    expect(items).toContainEqual(
      expect.objectContaining({
        type: "api_key.issued",
        data: expect.objectContaining({ keyId: key.id, prefix: key.prefix }),
      }),
    );
    // Their own API key is them too.
    expect((await get(`/customer/${alice.username}/history`, { "x-api-key": key.key })).status).toBe(200);

    expect((await get(`/customer/${alice.username}/history`, bob.bearer)).status).toBe(403);
    expect((await get(`/customer/${alice.username}/history`, auth.apiKey)).status).toBe(403);
    expect((await get(`/customer/${alice.username}/history`, {})).status).toBe(401);
    expect((await get("/customer/no_such_user_here/history", bob.bearer)).status).toBe(403);
  });

  it("documents the three histories in OpenAPI with examples", async () => {
    const doc = await json(await fetch(`${system.baseUrl}/openapi.json`));
    for (const [path, schema] of [
      ["/cheeses/{cheeseId}/history", "CheeseHistory"],
      ["/store/order/{orderId}/history", "OrderHistory"],
      ["/customer/{username}/history", "CustomerHistory"],
    ] as const) {
      const operation = doc.paths[path]?.get;
      expect(operation, path).toBeDefined();
      expect(operation.responses["200"].content["application/json"].schema.$ref).toBe(
        `#/components/schemas/${schema}`,
      );
      expect(doc.components.schemas[schema].example.items.length, schema).toBeGreaterThan(0);
      expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(
        expect.arrayContaining(["limit", "cursor"]),
      );
    }
  });
});
