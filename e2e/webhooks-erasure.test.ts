import { randomUUID } from "node:crypto";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { filesContaining } from "./support/files.ts";
import { natsAs } from "./support/nats-identity.ts";
import { createCheese, http } from "./support/orders.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/** On the production stack the events live in EventStoreDB, not in files these tests can read. */
const embeddedStores = !inject("containerStack")?.env.EVENTSTORE_URL;
if (!embeddedStores)
  console.warn("webhooks-erasure: files under DATA_DIR not scanned: the events are in EventStoreDB");

/**
 * A customer's shipping address and notes are shredded with the customer everywhere an order
 * travels after placement: the integration events JetStream keeps (`EVENTS`, no age limit) carry
 * them sealed under the customer's key, the webhook deliveries never carry them, so a delivery
 * made after the customer is erased, a retry or a replay, has nothing of them to give away.
 */
describe("an erased customer's order, in integration events and webhook deliveries", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let nats: NatsConnection;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  let customer: TestCustomer;
  let hook: { id: number; secret: string };
  let orderId: number;
  const marker = randomUUID().slice(0, 8);
  const address = {
    street: `${marker} Rind Row`,
    city: `Brieville${marker}`,
    zipCode: `Q${marker}`,
    country: "FR",
  };
  const notes = `Knock twice ${marker}`;
  const secrets = [address.street, address.city, address.zipCode, notes];

  beforeAll(async () => {
    receiver = await Receiver.start();
    receiver.behave("/orders", { status: 500 });
    system = await startSystem({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,200ms,200ms,200ms,200ms,200ms",
        WEBHOOK_TIMEOUT: "1s",
      },
    });
    operator = await operatorHeaders(system);
    const registered = await http(system).post(
      "/webhooks",
      { url: receiver.url("/orders"), events: ["order.placed"] },
      operator.apiKey,
    );
    expect(registered.status).toBe(201);
    hook = await json(registered);
    customer = await registerAndLogin(system);
    const cheese = await createCheese(system, operator.bearer);
    const placed = await http(system).post(
      "/store/order",
      { items: [{ cheeseId: cheese.id, quantity: 1 }], shippingAddress: address, notes },
      customer.bearer,
    );
    expect(placed.status).toBe(201);
    const order = await json(placed);
    // The customer who placed it sees its address and notes.
    expect(order).toMatchObject({ shippingAddress: address, notes });
    orderId = order.id;
    nats = await natsAs(system, "notification");
  });
  afterAll(async () => {
    await nats?.close();
    await system?.stop();
    await receiver?.close();
  });

  const deliveries = () => http(system).get(`/webhooks/${hook.id}/deliveries`, operator.apiKey);

  it("delivers order.placed after the customer is erased (replayed from the dead letters) with nothing of the address or notes", async () => {
    const failed = await receiver.waitFor("/orders", 6, 30_000);
    await expect
      .poll(async () => (await json(await deliveries())).items[0]?.status, { timeout: 15_000 })
      .toBe("dead_lettered");

    const erased = await http(system).delete(`/customer/${customer.username}`, customer.bearer, {
      currentPassword: customer.password,
    });
    expect(erased.status).toBe(204);
    const read = await json(await http(system).get(`/store/order/${orderId}`, operator.apiKey));
    expect(read).toMatchObject({ shippingAddress: { street: "[erased]", city: "[erased]", country: "FR" } });
    expect(read.notes).toBeNull();

    receiver.behave("/orders", { status: 200 });
    const replay = await http(system).post(`/webhooks/${hook.id}/replay`, {}, operator.apiKey);
    expect(replay.status).toBe(202);
    const delivered = (await receiver.waitFor("/orders", 7))[6]!;
    const envelope = envelopeOf(delivered);
    expect(envelope).toMatchObject({
      type: "order.placed",
      data: { order_id: String(orderId), customer_id: String(customer.id), status: "placed" },
    });
    // The documented order data, unchanged for receivers: ids and business facts, no address.
    expect(Object.keys(envelope.data).sort()).toEqual(
      ["customer_id", "items", "order_id", "status", "total", "updated_at"].sort(),
    );
    // Every attempt, before the erasure and after, sent the same bytes; none held any of it.
    for (const request of [...failed, delivered]) {
      expect(request.body).toBe(failed[0]!.body);
      for (const secret of secrets) expect(request.body, secret).not.toContain(secret);
    }

    await expect.poll(async () => (await json(await deliveries())).items[0]?.status).toBe("delivered");
    const listed = await (await deliveries()).text();
    for (const secret of secrets) expect(listed, secret).not.toContain(secret);
  });

  it("keeps the order's integration events in JetStream with the address and notes sealed, never in clear", async () => {
    const jsm = await nats.jetstreamManager();
    const { state } = await jsm.streams.info("EVENTS");
    const ofOrder: { subject: string; raw: string }[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const message = await jsm.streams.getMessage("EVENTS", { seq });
      if (!message.subject.startsWith("events.ordering.order.")) continue;
      const raw = new TextDecoder().decode(message.data);
      if (JSON.parse(raw).order?.id === orderId) ofOrder.push({ subject: message.subject, raw });
    }
    expect(ofOrder.map((m) => m.subject)).toContain("events.ordering.order.placed");
    for (const { subject, raw } of ofOrder) {
      for (const secret of secrets) expect(raw, `${subject}: ${secret}`).not.toContain(secret);
      const payload = JSON.parse(raw);
      expect(payload.order.shippingAddress, subject).toEqual({
        street: "[erased]",
        city: "[erased]",
        country: "FR",
      });
      expect(payload.order.notes, subject).toBeNull();
      expect(payload.personal, subject).toEqual(expect.any(String));
    }
  });

  it.skipIf(!embeddedStores)(
    "leaves the address and notes in no file under DATA_DIR: event stores, JetStream, deliveries",
    () => {
      for (const secret of secrets) expect(filesContaining(system.dataDir, secret), secret).toEqual([]);
    },
  );
});
