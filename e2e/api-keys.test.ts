import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { filesContaining } from "./support/files.ts";
import { busAs } from "./support/nats-identity.ts";
import { type ExtraGateway, startExtraGateway } from "./support/second-gateway.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

type MessageBus = Awaited<ReturnType<typeof busAs>>;

const DAY_MS = 24 * 3_600_000;

/**
 * Customer API keys over HTTP: issued once and shown once, listed without the key, usable as
 * X-API-Key for what the customer may read, revocable everywhere within a second, and announced
 * 7 days before they expire. API_KEY_EXPIRY_WARNING is widened past the 90-day lifetime here, so
 * every new key is already within its warning window and the event can be seen at once.
 */
describe("customer API keys", () => {
  let system: RunningSystem;
  let second: ExtraGateway;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  let bus: MessageBus;
  const expiring: unknown[] = [];
  let alice: TestCustomer;
  let bob: TestCustomer;
  let cheeseId: number;

  beforeAll(async () => {
    system = await startSystem({
      env: { API_KEY_EXPIRY_WARNING: "2200h" },
    });
    second = await startExtraGateway(system);
    operator = await operatorHeaders(system);
    bus = await busAs(system, "notification");
    bus.consume({
      durable: `e2e-api-keys-${randomUUID().slice(0, 8)}`,
      subjects: ["events.customer.api_key.expiring"],
      handler: async (event) => {
        expiring.push(event.payload);
      },
    });
    alice = await registerAndLogin(system);
    bob = await registerAndLogin(system);
    const cheese = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...operator.bearer },
      body: JSON.stringify({ name: "Key Gouda" }),
    });
    cheeseId = (await json(cheese)).id;
  });
  afterAll(async () => {
    await bus?.close();
    await second?.stop();
    await system?.stop();
  });

  const call = (
    method: string,
    path: string,
    headers: Record<string, string> = {},
    baseUrl = system.baseUrl,
  ) => fetch(`${baseUrl}${path}`, { method, headers: { "content-type": "application/json", ...headers } });
  const issue = async (customer: TestCustomer) => {
    const response = await call("POST", `/customer/${customer.username}/apiKeys`, customer.bearer);
    expect(response.status).toBe(201);
    return json(response);
  };

  it("issues a key once: id, key, prefix, plan, createdAt and a 90-day expiresAt", async () => {
    const response = await call("POST", `/customer/${alice.username}/apiKeys`, alice.bearer);
    expect(response.status).toBe(201);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const key = await json(response);
    expect(key).toEqual({
      id: expect.any(Number),
      key: expect.any(String),
      prefix: expect.any(String),
      plan: "free",
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
    });
    expect(key.key.startsWith(key.prefix)).toBe(true);
    expect(key.key.length).toBeGreaterThan(40);
    expect(Date.parse(key.expiresAt) - Date.parse(key.createdAt)).toBe(90 * DAY_MS);

    const listed = await json(await call("GET", `/customer/${alice.username}/apiKeys`, alice.bearer));
    const mine = listed.find((k: { id: number }) => k.id === key.id);
    expect(mine).toEqual({
      id: key.id,
      prefix: key.prefix,
      plan: "free",
      createdAt: key.createdAt,
      expiresAt: key.expiresAt,
    });
    expect(JSON.stringify(listed)).not.toContain(key.key);
  });

  it("stores only a hash: the key appears nowhere under DATA_DIR", async () => {
    const { key } = await issue(alice);
    // In use everywhere it goes: issued, recorded, projected, looked up by the gateway.
    expect((await call("GET", `/customer/${alice.username}`, { "x-api-key": key })).status).toBe(200);
    expect(filesContaining(system.dataDir, key)).toEqual([]);
  });

  it("reads what its customer may read, with X-API-Key, on any gateway", async () => {
    const { key } = await issue(alice);
    const headers = { "x-api-key": key };
    for (const baseUrl of [system.baseUrl, second.baseUrl]) {
      const own = await call("GET", `/customer/${alice.username}`, headers, baseUrl);
      expect(own.status).toBe(200);
      expect((await json(own)).id).toBe(alice.id);
    }
    expect((await call("GET", `/customer/${bob.username}`, headers)).status).toBe(403);
    expect((await call("GET", `/cheeses/${cheeseId}`, headers)).status).toBe(200);
    // api_key is not bearer_auth, and a customer key carries no OAuth scope.
    expect((await call("GET", `/customer/${alice.username}/apiKeys`, headers)).status).toBe(403);
    expect((await call("POST", "/cheeses", headers)).status).toBe(403);
  });

  it("lets only the customer itself issue, list and revoke its keys", async () => {
    expect((await call("POST", `/customer/${bob.username}/apiKeys`, alice.bearer)).status).toBe(403);
    expect((await call("GET", `/customer/${bob.username}/apiKeys`, alice.bearer)).status).toBe(403);
    expect((await call("POST", `/customer/${alice.username}/apiKeys`, operator.apiKey)).status).toBe(403);
    const anonymous = await call("POST", `/customer/${alice.username}/apiKeys`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBeTruthy();
    const bobs = await issue(bob);
    expect(
      (await call("DELETE", `/customer/${alice.username}/apiKeys/${bobs.id}`, alice.bearer)).status,
    ).toBe(404);
    expect((await call("DELETE", `/customer/${bob.username}/apiKeys/${bobs.id}`, alice.bearer)).status).toBe(
      403,
    );
    expect((await call("GET", `/customer/${bob.username}`, { "x-api-key": bobs.key })).status).toBe(200);
  });

  it("revokes a key: it stops working on every gateway within a second and leaves the list", async () => {
    const { id, key } = await issue(alice);
    const headers = { "x-api-key": key };
    expect((await call("GET", `/customer/${alice.username}`, headers, second.baseUrl)).status).toBe(200);
    expect((await call("DELETE", `/customer/${alice.username}/apiKeys/${id}`, alice.bearer)).status).toBe(
      204,
    );
    const revokedAt = Date.now();
    for (const baseUrl of [system.baseUrl, second.baseUrl]) {
      await expect
        .poll(async () => (await call("GET", `/customer/${alice.username}`, headers, baseUrl)).status, {
          timeout: 3000,
          interval: 20,
        })
        .toBe(401);
    }
    expect(Date.now() - revokedAt).toBeLessThan(1000);
    const listed = await json(await call("GET", `/customer/${alice.username}/apiKeys`, alice.bearer));
    expect(listed.map((k: { id: number }) => k.id)).not.toContain(id);
    expect((await call("DELETE", `/customer/${alice.username}/apiKeys/${id}`, alice.bearer)).status).toBe(
      404,
    );
    expect((await call("DELETE", `/customer/${alice.username}/apiKeys/abc`, alice.bearer)).status).toBe(400);
  });

  it("announces api_key.expiring once per key when it comes within its warning window", async () => {
    const { id, prefix, expiresAt } = await issue(bob);
    const about = (keyId: number) => () =>
      expiring.filter((e) => (e as { keyId: string }).keyId === String(keyId));
    await expect
      .poll(about(id))
      .toEqual([{ customerId: bob.id, username: bob.username, keyId: String(id), prefix, expiresAt }]);
    // A later key's warning is written after the first key's; the events arrive in the order
    // they were written, so a second warning of the first key would be here by now.
    const later = await issue(bob);
    await expect.poll(about(later.id)).toHaveLength(1);
    expect(about(id)()).toHaveLength(1);
  });
});
