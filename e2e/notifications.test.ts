import { randomUUID } from "node:crypto";
import { envelopeOf, type ReceivedEnvelope, Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { everyKind } from "./support/webhooks.ts";

/**
 * The event kinds that real actions in the other services send (docs/webhooks.md "Event kinds": which
 * change sends which kind), received and verified by a registration for every kind.
 * api_key.expiring needs a key close to expiry: e2e/api-key-expiring.test.ts shortens the
 * lifetime to see it.
 */
describe("webhook kinds sent by real actions", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  let secret: string;

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT: "2s" } });
    auth = await operatorHeaders(system);
    const registered = await call("POST", "/webhooks", auth.apiKey, {
      url: receiver.url("/all"),
      events: everyKind.filter((kind) => kind !== "webhook.disabled"),
    });
    expect(registered.status).toBe(201);
    secret = (await json(registered)).secret;
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    return fetch(`${system.baseUrl}${path}`, {
      method,
      headers: { ...headers, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  /** Waits for a delivery of `type` whose data matches, checks its signatures, and returns it. */
  async function received(
    type: string,
    matches: (data: Record<string, unknown>) => boolean,
    timeoutMs = 20_000,
  ) {
    const arrived = () =>
      receiver
        .requests("/all")
        .find((request) => envelopeOf(request).type === type && matches(envelopeOf(request).data));
    await expect.poll(arrived, { timeout: timeoutMs, message: `a ${type} delivery` }).toBeDefined();
    const found = arrived()!;
    const envelope = verifyWebhook(secret, found.rawBody, found.headers);
    expect(found.headers["x-cheese-event"]).toBe(type);
    return envelope as ReceivedEnvelope;
  }

  async function newCustomer() {
    const username = `hook_${randomUUID().slice(0, 8)}`;
    const password = "correct horse battery";
    const created = await call(
      "POST",
      "/customer",
      {},
      { username, email: `${username}@example.com`, password },
    );
    expect(created.status).toBe(201);
    const customer = await json(created);
    const login = await call("POST", "/customer/login", {}, { username, password });
    expect(login.status).toBe(200);
    const { token } = await json(login);
    return { customer, username, password, bearer: { authorization: `Bearer ${token}` } };
  }

  async function newCheese(fields: Record<string, unknown> = {}) {
    const created = await call("POST", "/cheeses", auth.bearer, {
      name: `Hook ${randomUUID()}`,
      pricePerKg: 150,
      ...fields,
    });
    expect(created.status).toBe(201);
    return json(created);
  }

  it("sends customer.created on registration, also for each element of a batch", async () => {
    const { customer, username } = await newCustomer();
    const single = await received("customer.created", (d) => d.username === username);
    expect(single.data).toEqual({ customer_id: String(customer.id), username });

    const names = [`batch_${randomUUID().slice(0, 8)}`, `batch_${randomUUID().slice(0, 8)}`];
    const batch = await call(
      "POST",
      "/customer/createMultiple",
      {},
      names.map((name) => ({
        username: name,
        email: `${name}@example.com`,
        password: "correct horse battery",
      })),
    );
    expect(batch.status).toBe(200);
    for (const name of names) await received("customer.created", (d) => d.username === name);
  });

  it("sends customer.updated when a customer changes their account", async () => {
    const { customer, username, password, bearer } = await newCustomer();
    const updated = await call("PUT", `/customer/${username}`, bearer, {
      username,
      email: `${username}@example.com`,
      password,
      currentPassword: password,
      firstName: "Renamed",
    });
    expect(updated.status).toBe(200);
    const event = await received("customer.updated", (d) => d.username === username);
    expect(event.data).toEqual({ customer_id: String(customer.id), username });
  });

  it("sends cheese.low_stock, cheese.out_of_stock and cheese.back_in_stock on status changes", async () => {
    const cheese = await newCheese();
    const id = String(cheese.id);
    const setStatus = async (status: string) =>
      expect((await call("POST", `/cheeses/${cheese.id}?status=${status}`, auth.bearer)).status).toBe(200);

    await setStatus("pending");
    expect((await received("cheese.low_stock", (d) => d.cheese_id === id)).data).toMatchObject({
      previous_status: "available",
      status: "pending",
    });
    await setStatus("sold");
    expect((await received("cheese.out_of_stock", (d) => d.cheese_id === id)).data).toMatchObject({
      previous_status: "pending",
      status: "sold",
    });
    await setStatus("available");
    expect((await received("cheese.back_in_stock", (d) => d.cheese_id === id)).data).toMatchObject({
      previous_status: "sold",
      status: "available",
    });
  });

  it("follows an order from placed to delivered, and the customer's tier change that follows", async () => {
    const { customer, bearer } = await newCustomer();
    const cheese = await newCheese({ pricePerKg: 150 });
    const placed = await call("POST", "/store/order", bearer, {
      items: [{ cheeseId: cheese.id, quantity: 1 }],
      shippingAddress: { street: "1 Hook Lane", city: "Wells", country: "GB" },
    });
    expect(placed.status).toBe(201);
    const order = await json(placed);
    const orderId = String(order.id);

    const placedEvent = await received("order.placed", (d) => d.order_id === orderId);
    expect(placedEvent.data).toMatchObject({
      customer_id: String(customer.id),
      status: "placed",
      total: 150,
    });
    await received("order.confirmed", (d) => d.order_id === orderId);

    const estimatedDelivery = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const shipped = await call("POST", `/store/order/${order.id}/ship`, auth.bearer, {
      carrier: "UPS",
      trackingNumber: "1Z999AA10123456784",
      estimatedDelivery,
    });
    expect(shipped.status).toBe(200);
    const shippedEvent = await received("order.shipped", (d) => d.order_id === orderId);
    expect(shippedEvent.data).toEqual({
      order_id: orderId,
      tracking_number: "1Z999AA10123456784",
      carrier: "UPS",
      estimated_delivery: estimatedDelivery,
    });

    expect((await call("POST", `/store/order/${order.id}/deliver`, auth.bearer)).status).toBe(200);
    await received("order.delivered", (d) => d.order_id === orderId);
    const tier = await received(
      "customer.subscription_changed",
      (d) => d.customer_id === String(customer.id),
    );
    expect(tier.data).toMatchObject({ previous_customer_status: "bronze", customer_status: "silver" });
  });

  it("sends order.cancelled when a customer cancels", async () => {
    const { bearer } = await newCustomer();
    const cheese = await newCheese({ pricePerKg: 10 });
    const placed = await call("POST", "/store/order", bearer, {
      items: [{ cheeseId: cheese.id, quantity: 2 }],
      shippingAddress: { street: "2 Hook Lane", city: "Wells", country: "GB" },
    });
    expect(placed.status).toBe(201);
    const order = await json(placed);
    expect((await call("DELETE", `/store/order/${order.id}`, bearer)).status).toBe(204);
    const cancelled = await received("order.cancelled", (d) => d.order_id === String(order.id));
    expect(cancelled.data).toMatchObject({ status: "cancelled", reason: expect.any(String) });
  });

  it("gives every event its own id, the same as webhook-id", () => {
    const requests = receiver.requests("/all");
    const ids = requests.map((request) => envelopeOf(request).id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const request of requests) expect(request.headers["webhook-id"]).toBe(envelopeOf(request).id);
  });
});
