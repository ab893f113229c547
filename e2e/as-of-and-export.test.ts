import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { authorizationCodeTokens } from "./support/oauth.ts";
import { address, createCheese, http, orderBody, waitForStatus } from "./support/orders.ts";
import { json, OPERATOR_CLIENT, type RunningSystem, startSystem } from "./support/system.ts";

const APP = { id: "cheese-board-app", redirectUri: "http://127.0.0.1:9/callback" };
const clients = [
  {
    ...OPERATOR_CLIENT,
    scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
    redirectUris: [],
    plan: "enterprise",
  },
  { id: APP.id, scopes: ["read:cheeses", "read:orders"], redirectUris: [APP.redirectUri], plan: "free" },
];

/**
 * Reads as of a moment (`?asOf=`: the aggregate's events up to then, folded) and a customer's data
 * export (GET /customer/{username}/export), on the running system.
 */
describe("reads as of a moment, and a customer's data export", () => {
  let system: RunningSystem;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;

  beforeAll(async () => {
    system = await startSystem({
      // Approval a second after placing, so the two events are recorded at different moments.
      env: { ORDER_AUTO_APPROVE_DELAY: "1s", OAUTH_CLIENTS: JSON.stringify(clients) },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const get = (path: string, headers: Record<string, string>) => http(system).get(path, headers);
  /** When each event of an aggregate was recorded, from its history, oldest first. */
  const times = async (path: string, headers: Record<string, string>) => {
    const page = await json(await get(`${path}/history?limit=100`, headers));
    return page.items.map((entry: { type: string; at: string }) => ({ type: entry.type, at: entry.at }));
  };
  /** Until the clock has passed `at`, so the next event is recorded after it. */
  const after = (at: string) => expect.poll(() => Date.now()).toBeGreaterThan(Date.parse(at));
  const before = (at: string) => new Date(Date.parse(at) - 1).toISOString();
  const asOf = (path: string, at: string, headers: Record<string, string>) =>
    get(`${path}?asOf=${encodeURIComponent(at)}`, headers);

  it("answers a renamed cheese as of a moment before the rename with its old name", async () => {
    const cheese = await createCheese(system, auth.bearer);
    const path = `/cheeses/${cheese.id}`;
    const [added] = await times(path, auth.apiKey);
    await after(added.at);
    const renamed = await http(system).post(
      `${path}?name=${encodeURIComponent(`${cheese.name} affiné`)}`,
      {},
      auth.bearer,
    );
    expect(renamed.status).toBe(200);
    const [, rename] = await times(path, auth.apiKey);
    expect(rename.type).toBe("cheese.updated");
    // The read cache now holds the renamed cheese; the read as of a moment does not go through it.
    expect((await json(await get(path, auth.apiKey))).name).toBe(`${cheese.name} affiné`);

    const then = await asOf(path, before(rename.at), auth.apiKey);
    expect(then.status).toBe(200);
    expect(await json(then)).toEqual(cheese);
    expect(then.headers.get("x-cheese-as-of")).toBe(added.at);
    expect(then.headers.get("etag")).toBe('"0"');
    const unchanged = await get(`${path}?asOf=${encodeURIComponent(before(rename.at))}`, {
      ...auth.apiKey,
      "if-none-match": '"0"',
    });
    expect(unchanged.status).toBe(304);

    const atRename = await asOf(path, rename.at, auth.apiKey);
    expect((await json(atRename)).name).toBe(`${cheese.name} affiné`);
    expect(atRename.headers.get("x-cheese-as-of")).toBe(rename.at);

    // Not there yet, and not there any more.
    expect((await asOf(path, before(added.at), auth.apiKey)).status).toBe(404);
    await after(rename.at);
    const deleted = await http(system).delete(path, { ...auth.bearer, "x-confirm-delete": "true" });
    expect(deleted.status).toBe(204);
    expect((await asOf(path, new Date().toISOString(), auth.apiKey)).status).toBe(404);
    expect((await json(await asOf(path, rename.at, auth.apiKey))).name).toBe(`${cheese.name} affiné`);
  });

  it("refuses a malformed or future asOf with 400 naming asOf", async () => {
    const cheese = await createCheese(system, auth.bearer);
    for (const value of [
      "yesterday",
      "2026-13-01T00:00:00Z",
      "2026-03-01T10:00:00",
      new Date(Date.now() + 3_600_000).toISOString(),
    ]) {
      for (const path of [`/cheeses/${cheese.id}`, "/store/order/1"]) {
        const response = await asOf(path, value, auth.apiKey);
        expect(response.status, `${path}?asOf=${value}`).toBe(400);
        const body = await json(response);
        expect(body).toMatchObject({ code: 400, type: "bad_request" });
        expect(body.message).toContain("asOf");
      }
    }
  });

  describe("a customer with an order, an API key and an OAuth grant", () => {
    let alice: TestCustomer;
    let bob: TestCustomer;
    let orderId: number;
    let keyPrefix: string;
    let key: string;
    let appToken: string;
    const laterOrders: number[] = [];
    const elsewhere = { street: "3 Whey Road", city: "Bath", country: "GB" };

    beforeAll(async () => {
      alice = await registerAndLogin(system, { firstName: "Alice", phone: "+44 1234 567890" });
      bob = await registerAndLogin(system);
      const cheese = await createCheese(system, auth.bearer, { pricePerKg: 30 });
      const placed = await http(system).post(
        "/store/order",
        orderBody([{ cheeseId: cheese.id, quantity: 1 }], { notes: "ring twice" }),
        alice.bearer,
      );
      expect(placed.status).toBe(201);
      orderId = (await json(placed)).id;
      // Two more: one to another address, then one to the first again.
      for (const shippingAddress of [elsewhere, address]) {
        const more = await http(system).post(
          "/store/order",
          orderBody([{ cheeseId: cheese.id, quantity: 1 }], { shippingAddress }),
          alice.bearer,
        );
        expect(more.status).toBe(201);
        laterOrders.unshift((await json(more)).id);
      }
      const issued = await http(system).post(`/customer/${alice.username}/apiKeys`, {}, alice.bearer);
      expect(issued.status).toBe(201);
      ({ prefix: keyPrefix, key } = await json(issued));
      appToken = (await authorizationCodeTokens(system.rootUrl, APP, alice, "read:orders")).access_token;
    });

    it("answers an order as of a moment to whoever may read it now", async () => {
      await waitForStatus(system, orderId, "approved", alice.bearer);
      const path = `/store/order/${orderId}`;
      const [placed, approved] = await times(path, alice.bearer);
      expect([placed.type, approved.type]).toEqual(["order.placed", "order.approved"]);
      const then = await asOf(path, placed.at, alice.bearer);
      expect(then.status).toBe(200);
      expect(await json(then)).toMatchObject({ id: orderId, status: "placed", shippingAddress: address });
      expect(then.headers.get("x-cheese-as-of")).toBe(placed.at);
      expect((await json(await asOf(path, approved.at, auth.apiKey))).status).toBe("approved");
      expect((await asOf(path, before(placed.at), alice.bearer)).status).toBe(404);
      expect((await asOf(path, placed.at, bob.bearer)).status).toBe(404);
    });

    it("exports everything held about the customer to the customer and to an operator, to nobody else", async () => {
      const response = await get(`/customer/${alice.username}/export`, alice.bearer);
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toContain("no-store");
      const text = await response.text();
      expect(text).not.toContain(key);
      const exported = JSON.parse(text);
      expect(exported.customer).toMatchObject({
        id: alice.id,
        username: alice.username,
        firstName: "Alice",
        email: alice.email,
        phone: "+44 1234 567890",
      });
      // Each address once, newest first.
      expect(exported.addresses).toEqual([
        expect.objectContaining(address),
        expect.objectContaining(elsewhere),
      ]);
      expect(exported.orders.map((order: { id: number }) => order.id)).toEqual([...laterOrders, orderId]);
      expect(exported.orders.slice(-1)).toEqual([
        expect.objectContaining({
          id: orderId,
          shippingAddress: expect.objectContaining(address),
          notes: "ring twice",
        }),
      ]);
      expect(exported.apiKeys).toEqual([
        expect.objectContaining({ prefix: keyPrefix, revoked: false, expiresAt: expect.any(String) }),
      ]);
      expect(exported.apiKeys[0]).not.toHaveProperty("key");
      expect(exported.oauthGrants).toEqual([
        expect.objectContaining({ clientId: APP.id, scopes: ["read:orders"] }),
      ]);
      expect(exported.history.map((entry: { type: string }) => entry.type)).toEqual(
        expect.arrayContaining(["customer.registered", "api_key.issued"]),
      );
      expect(exported.history[0].data).toMatchObject({ email: alice.email, firstName: "Alice" });

      const byOperator = await get(`/customer/${alice.username}/export`, auth.apiKey);
      expect(byOperator.status).toBe(200);
      expect((await json(byOperator)).orders.map((order: { id: number }) => order.id)).toEqual([
        ...laterOrders,
        orderId,
      ]);
      // The customer's own API key exports too; a token the customer gave an OAuth client does not.
      expect((await get(`/customer/${alice.username}/export`, { "x-api-key": key })).status).toBe(200);
      const byApp = await get(`/customer/${alice.username}/export`, { authorization: `Bearer ${appToken}` });
      expect(byApp.status).toBe(403);
      const byBob = await get(`/customer/${alice.username}/export`, bob.bearer);
      expect(byBob.status).toBe(403);
      expect(await json(byBob)).toMatchObject({ code: 403, type: "forbidden" });
      expect((await get(`/customer/${alice.username}/export`, {})).status).toBe(401);
    });

    it("after erasure: no export (404), and the order as of any moment reads redacted", async () => {
      const erased = await http(system).delete(`/customer/${alice.username}`, alice.bearer, {
        currentPassword: alice.password,
      });
      expect(erased.status).toBe(204);
      const response = await get(`/customer/${alice.username}/export`, auth.apiKey);
      expect(response.status).toBe(404);
      expect(await json(response)).toMatchObject({ code: 404, type: "not_found" });

      const [placed] = await times(`/store/order/${orderId}`, auth.apiKey);
      const then = await json(await asOf(`/store/order/${orderId}`, placed.at, auth.apiKey));
      expect(then).toMatchObject({ id: orderId, status: "placed", notes: null });
      expect(then.shippingAddress).toEqual({
        street: "[erased]",
        city: "[erased]",
        country: address.country,
      });
    });
  });
});
