import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Order } from "@cheese/contracts";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { filesContaining } from "./support/files.ts";
import { natsAs } from "./support/nats-identity.ts";
import { createCheese, http } from "./support/orders.ts";
import { type ExtraGateway, startExtraGateway } from "./support/second-gateway.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/** Gateway processes behind the system's URL (the launcher's balancer when more than one). */
const replicas = Number(process.env.E2E_REPLICAS ?? "1");

/** On the production stack the events live in EventStoreDB, not in a file these tests can read. */
const embeddedEventStore = !inject("containerStack")?.env.EVENTSTORE_URL;

/**
 * DELETE /customer/{username}: the account, its API keys and sessions go, its personal data can
 * no longer be read from any store (the event store included: it was sealed with a key that is
 * now destroyed), and its username and email can be registered again.
 */
describe("erasure", () => {
  let system: RunningSystem;
  let second: ExtraGateway;
  let alice: TestCustomer;
  let bob: TestCustomer;
  let apiKey: string;
  let orderId: number;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  const marker = randomUUID().slice(0, 8);
  const address = {
    street: `${marker} Whey Street`,
    city: `Curdbury${marker}`,
    zipCode: `Z${marker}`,
    country: "GB",
  };
  const personal = {
    firstName: `Ottoline${marker}`,
    lastName: `Morrell${marker}`,
    phone: `+44 ${Number.parseInt(marker, 16) % 1_000_000_000}`,
  };

  beforeAll(async () => {
    system = await startSystem();
    second = await startExtraGateway(system);
    alice = await registerAndLogin(system, {
      ...personal,
      email: `Ottoline.${marker}@Example.com`,
      favouriteCheese: { name: "Wensleydale" },
    });
    bob = await registerAndLogin(system);
    const issued = await fetch(`${system.baseUrl}/customer/${alice.username}/apiKeys`, {
      method: "POST",
      headers: alice.bearer,
    });
    apiKey = (await json(issued)).key;
    operator = await operatorHeaders(system);
    const cheese = await createCheese(system, operator.bearer);
    const placed = await http(system).post(
      "/store/order",
      { items: [{ cheeseId: cheese.id, quantity: 1 }], shippingAddress: address, notes: `Ring ${marker}` },
      // A repeat is answered from the order itself (sealed under the customer's key), never a stored copy.
      { ...alice.bearer, "Idempotency-Key": `order-${marker}` },
    );
    expect(placed.status).toBe(201);
    orderId = (await json(placed)).id;
  });
  afterAll(async () => {
    await second?.stop();
    await system?.stop();
  });

  const get = (path: string, headers: Record<string, string>, baseUrl = system.baseUrl) =>
    fetch(`${baseUrl}${path}`, { headers });
  const remove = (username: string, headers: Record<string, string>, currentPassword = alice.password) =>
    fetch(`${system.baseUrl}/customer/${username}`, {
      method: "DELETE",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ currentPassword }),
    });

  it("lets only the customer itself delete its account, with its password again", async () => {
    expect((await remove(alice.username, bob.bearer, bob.password)).status).toBe(403);
    // A session token alone is not enough: no password is 422, a wrong one 403.
    const bare = await fetch(`${system.baseUrl}/customer/${alice.username}`, {
      method: "DELETE",
      headers: alice.bearer,
    });
    expect(bare.status).toBe(422);
    const wrong = await remove(alice.username, alice.bearer, "not alice's password");
    expect(wrong.status).toBe(403);
    expect(await json(wrong)).toMatchObject({
      code: 403,
      message: expect.stringContaining("currentPassword"),
    });
    expect((await remove(alice.username, { "x-api-key": apiKey })).status).toBe(403);
    expect((await remove(alice.username, {})).status).toBe(401);
    const before = await json(await get(`/customer/${alice.username}`, alice.bearer));
    expect(before).toMatchObject({ ...personal, email: alice.email });
  });

  it("deletes the account, and with it every session and API key, on every gateway", async () => {
    expect((await get(`/customer/${alice.username}`, alice.bearer, second.baseUrl)).status).toBe(200);
    expect((await get(`/customer/${alice.username}`, { "x-api-key": apiKey }, second.baseUrl)).status).toBe(
      200,
    );
    expect((await remove(alice.username, alice.bearer)).status).toBe(204);
    const status = (headers: Record<string, string>) => async () =>
      (await get(`/customer/${alice.username}`, headers, second.baseUrl)).status;
    // The gateway that answered 204 refuses them at once; the others within a second. With
    // E2E_REPLICAS=2 the system's URL is the launcher's balancer, whose next pick may be the
    // other gateway process: that one is given the same second.
    if (replicas === 1) {
      expect((await get(`/customer/${alice.username}`, alice.bearer)).status).toBe(401);
      expect((await get(`/customer/${alice.username}`, { "x-api-key": apiKey })).status).toBe(401);
    } else {
      const viaBalancer = (headers: Record<string, string>) => async () =>
        (await get(`/customer/${alice.username}`, headers)).status;
      await expect.poll(viaBalancer(alice.bearer), { timeout: 1000, interval: 20 }).toBe(401);
      await expect.poll(viaBalancer({ "x-api-key": apiKey }), { timeout: 1000, interval: 20 }).toBe(401);
    }
    await expect.poll(status(alice.bearer), { timeout: 1000, interval: 20 }).toBe(401);
    await expect.poll(status({ "x-api-key": apiKey }), { timeout: 1000, interval: 20 }).toBe(401);
    expect((await get(`/customer/${alice.username}`, { "x-api-key": "e2e-operator-key" })).status).toBe(404);
    const login = await fetch(`${system.baseUrl}/customer/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: alice.username, password: alice.password }),
    });
    expect(login.status).toBe(401);
  });

  it.skipIf(!embeddedEventStore)(
    "leaves no trace of the name, email or phone in any store: event store, key store, NATS",
    async () => {
      const eventStore = join(system.dataDir, "customer", "events.sqlite");
      expect(existsSync(eventStore)).toBe(true);
      // The raw bytes of the event store file (and its write-ahead log) hold events of alice...
      const raw = Buffer.concat(
        [eventStore, `${eventStore}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
      );
      expect(raw.includes(alice.username)).toBe(true);
      // ...but none of her personal data, in any spelling.
      for (const secret of [alice.email, alice.email.toLowerCase(), ...Object.values(personal)]) {
        expect(raw.includes(secret), secret).toBe(false);
        expect(filesContaining(system.dataDir, secret), secret).toEqual([]);
      }
      expect(
        readdirSync(join(system.dataDir, "customer", "keys")).filter((f) => f.includes(`-${alice.id}.`)),
      ).toEqual([]);
    },
  );

  it("answers the erased customer's orders with the address redacted, and its store keeps none", async () => {
    const read = await get(`/store/order/${orderId}`, operator.apiKey);
    expect(read.status).toBe(200);
    const order = await json(read);
    expect(order.shippingAddress).toEqual({ street: "[erased]", city: "[erased]", country: "GB" });
    expect(order.notes).toBeNull();
    expect(Order.safeParse(order).success).toBe(true);
    const listed = await json(await get("/store/orders?limit=100", operator.apiKey));
    expect(listed.items.find((o: { id: number }) => o.id === orderId)).toEqual(order);
    if (!embeddedEventStore) return;
    // Sealed under the customer's key from the start: the ordering event store never held them.
    const ordering = join(system.dataDir, "ordering", "events.sqlite");
    const raw = Buffer.concat(
      [ordering, `${ordering}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
    );
    expect(raw.includes(`"id":${orderId}`)).toBe(true);
    for (const secret of [address.street, address.city, address.zipCode, `Ring ${marker}`]) {
      expect(raw.includes(secret), secret).toBe(false);
    }
  });

  it("keeps the erased customer's address (its keyed order's) in no key-value bucket and no file", async () => {
    // The operators' identity lists the buckets; each is read as the service that owns it.
    const connected: NatsConnection[] = [];
    const as = async (identity: string) => {
      const nc = await natsAs(system, identity);
      connected.push(nc);
      return nc;
    };
    try {
      const monitor = await as("monitor");
      const owners = {
        gateway: await as("gateway"),
        catalogue: await as("catalogue"),
        customer: await as("customer"),
        notification: await as("notification"),
      };
      const held: string[] = [];
      for await (const stream of (await monitor.jetstreamManager()).streams.list()) {
        if (!stream.config.name.startsWith("KV_")) continue;
        const bucket = stream.config.name.slice("KV_".length);
        const owner =
          bucket === "publisher_checkpoints" || bucket === "notice_streams"
            ? owners.catalogue
            : bucket === "rate_limits"
              ? owners.gateway
              : bucket === "webhook_throttle"
                ? owners.notification
                : owners.customer;
        const kv = await owner.jetstream().views.kv(bucket);
        for await (const key of await kv.keys()) {
          const entry = await kv.get(key);
          if (entry?.operation === "PUT" && entry.string().includes(address.street))
            held.push(`${bucket} ${key}`);
        }
      }
      expect(held).toEqual([]);
      expect(filesContaining(system.dataDir, address.street)).toEqual([]);
    } finally {
      await Promise.all(connected.map((nc) => nc.close()));
    }
  });

  it("lets the username and email be registered again, as a new customer", async () => {
    const again = await registerAndLogin(system, {
      username: alice.username,
      email: alice.email.toUpperCase(),
    });
    expect(again.id).not.toBe(alice.id);
    const read = await json(await get(`/customer/${alice.username}`, again.bearer));
    expect(read).toMatchObject({ id: again.id, customerStatus: "bronze" });
    expect(read).not.toHaveProperty("firstName");
    // The old session is still refused: it belonged to the erased customer, not to the name.
    expect((await get(`/customer/${alice.username}`, alice.bearer)).status).toBe(401);
  });
});
