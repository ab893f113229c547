import { catalogueEvents, customerRpc, type Order, orderingEvents, orderingRpc } from "@cheese/contracts";
import {
  callRpc,
  consumeEvents,
  type MessageBus,
  publishEvent,
  RemoteError,
  type RpcDefinition,
} from "@cheese/messaging";
import { ManualClock } from "@cheese/service-kit/testing";
import { address, fakeCatalogue, fakeCustomerVault } from "@cheese/service-testing/stand-ins";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOutcomeOfPlacement, newBroker, orderingOn } from "./support.ts";

const operator = { customerId: null, ownerId: "client:ops" };
const everyone = { kind: "operator" as const, customerId: null };
const operatorClient = { kind: "client" as const, customerId: null };

/** Places an operator's order of one of cheese `cheeseId`, over `bus`. */
const placeOneOn = async (bus: MessageBus, cheeseId: number) =>
  (
    await callRpc(
      bus,
      orderingRpc.placeOrder,
      {
        fields: { items: [{ cheeseId, quantity: 1 }], shippingAddress: address, notes: null },
        owner: operator,
      },
      { timeoutMs: 5000 },
    )
  ).order;
const statusOn = async (bus: MessageBus, orderId: number) =>
  (await callRpc(bus, orderingRpc.getOrder, { orderId, actor: everyone }, { timeoutMs: 5000 })).order.status;

describe("the ordering service over its bus", () => {
  const broker = newBroker();
  const catalogue = fakeCatalogue(broker);
  const vault = fakeCustomerVault(broker);
  let running: Awaited<ReturnType<typeof orderingOn>>;
  let bus: MessageBus;
  const published: { subject: string; payload: { order: Order } & Record<string, unknown> }[] = [];

  beforeAll(async () => {
    running = await orderingOn(broker);
    bus = broker.connect("test");
    consumeEvents(bus, {
      durable: "test-ordering-events",
      events: Object.values(orderingEvents),
      handler: async (event) => {
        published.push(event as never);
      },
      onInvalid: (event, error) => {
        throw new Error(`invalid ${event.subject}: ${error.message}`);
      },
    });
  });
  afterAll(async () => {
    await running.service.stop();
    await catalogue.close();
    await vault.close();
    running.dataDir.remove();
  });

  const call = (
    name: Exclude<keyof typeof orderingRpc, "listOrders" | "activeOrdersForCheese">,
    payload: unknown,
  ) =>
    callRpc(bus, orderingRpc[name] as RpcDefinition, payload, { timeoutMs: 5000 }) as Promise<{
      order: Order;
    }>;
  const place = (items: { cheeseId: number; quantity: number }[], extra: Record<string, unknown> = {}) =>
    call("placeOrder", {
      fields: { items, shippingAddress: address, notes: null },
      owner: operator,
      ...extra,
    });
  const statusOf = async (orderId: number) =>
    (await call("getOrder", { orderId, actor: everyone })).order.status;
  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RemoteError);
    return (error as RemoteError).body;
  };

  it("refuses lines the catalogue cannot sell, naming each, and reports a down catalogue as 503", async () => {
    catalogue.add(101);
    catalogue.add(102, { status: "sold" });
    catalogue.add(103, { pricePerKg: undefined });
    const body = await refusal(
      place([
        { cheeseId: 101, quantity: 1 },
        { cheeseId: 102, quantity: 1 },
        { cheeseId: 103, quantity: 1 },
        { cheeseId: 104, quantity: 1 },
      ]),
    );
    expect(body).toMatchObject({ status: 422, type: "validation_error" });
    expect(body.errors?.map((e) => e.field)).toEqual([
      "items[1].cheeseId",
      "items[2].cheeseId",
      "items[3].cheeseId",
    ]);

    catalogue.setDown(true);
    try {
      expect(await refusal(place([{ cheeseId: 101, quantity: 1 }]))).toMatchObject({ status: 503 });
    } finally {
      catalogue.setDown(false);
    }
  });

  it("approves a placed order at its re-check while its cheeses are available", async () => {
    catalogue.add(111);
    const { order } = await place([{ cheeseId: 111, quantity: 1 }]);
    expect(order.status).toBe("placed");
    await expect.poll(() => statusOf(order.id)).toBe("approved");
  });

  it("publishes every transition with the order, its customer and the shipping details", async () => {
    catalogue.add(121, { pricePerKg: 12.5 });
    const { order } = await call("placeOrder", {
      fields: { items: [{ cheeseId: 121, quantity: 2 }], shippingAddress: address, notes: null },
      owner: { customerId: 42, ownerId: "cust:42" },
    });
    await expect.poll(() => statusOf(order.id)).toBe("approved");
    const shipment = { carrier: "DHL", trackingNumber: "JD1", estimatedDelivery: "2030-01-01T00:00:00Z" };
    await call("shipOrder", { orderId: order.id, actor: operatorClient, ...shipment });
    await call("deliverOrder", { orderId: order.id, actor: operatorClient });
    const second = (await place([{ cheeseId: 121, quantity: 1 }])).order;
    await call("cancelOrder", { orderId: second.id, actor: everyone });

    const ofOrder = () => published.filter((e) => e.payload.order.id === order.id);
    await expect
      .poll(() => ofOrder().map((e) => [e.subject, e.payload.order.status, e.payload.customerId]))
      .toEqual([
        [orderingEvents.orderPlaced.subject, "placed", 42],
        [orderingEvents.orderApproved.subject, "approved", 42],
        [orderingEvents.orderShipped.subject, "shipped", 42],
        [orderingEvents.orderDelivered.subject, "delivered", 42],
      ]);
    expect(ofOrder().every((e) => e.payload.order.total === 25)).toBe(true);
    expect(ofOrder()[2]?.payload).toMatchObject(shipment);
    expect(ofOrder()[0]?.payload).not.toHaveProperty("ownerId");
    const cancelled = () =>
      published.find(
        (e) => e.payload.order.id === second.id && e.subject === orderingEvents.orderCancelled.subject,
      )?.payload;
    await expect.poll(cancelled).toMatchObject({ customerId: null, reason: expect.any(String) });
    // An operator order belongs to no customer: its address travels as it is stored, in clear.
    expect(cancelled()?.order.shippingAddress).toEqual(address);
  });

  it("publishes a customer's address and notes sealed, never opened: erasing the customer shreds them", async () => {
    catalogue.add(131);
    const notes = "Leave it with the neighbour at number 9";
    const { order } = await call("placeOrder", {
      fields: { items: [{ cheeseId: 131, quantity: 1 }], shippingAddress: address, notes },
      owner: { customerId: 43, ownerId: "cust:43" },
    });
    // The reply opens them for the customer who placed it...
    expect(order).toMatchObject({ shippingAddress: address, notes });
    await expect.poll(() => statusOf(order.id)).toBe("approved");
    const events = () => published.filter((e) => e.payload.order.id === order.id);
    await expect.poll(() => events().map((e) => e.subject)).toHaveLength(2);
    for (const { payload } of events()) {
      // ...the integration events, which JetStream keeps, hold no plaintext of either...
      const raw = JSON.stringify(payload);
      for (const secret of [address.street, address.city, notes]) expect(raw, secret).not.toContain(secret);
      expect(payload.order).toMatchObject({
        shippingAddress: { street: "[erased]", city: "[erased]", country: address.country },
        notes: null,
      });
    }
    // ...only the seal, which the customer service opens while the customer exists, and not after.
    const open = () =>
      callRpc(
        bus,
        customerRpc.openPersonalData,
        {
          purpose: "order",
          items: events().map((e) => ({ customerId: 43, sealed: e.payload.personal as string })),
        },
        { timeoutMs: 5000 },
      );
    expect((await open()).items).toEqual([
      { shippingAddress: address, notes },
      { shippingAddress: address, notes },
    ]);
    vault.erase(43);
    expect((await open()).items).toEqual([null, null]);
  });

  it("places one order for concurrent repeats of an idempotency key, and 409s another body", async () => {
    catalogue.add(131);
    const idempotency = { key: "a".repeat(64), fingerprint: "first body" };
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => place([{ cheeseId: 131, quantity: 1 }], { idempotency })),
    );
    expect(new Set(replies.map((r) => JSON.stringify(r.order))).size).toBe(1);
    const again = await place([{ cheeseId: 131, quantity: 1 }], { idempotency });
    expect(again.order).toEqual(replies[0]!.order); // as first placed, even once approved
    const other = await refusal(
      place([{ cheeseId: 131, quantity: 2 }], {
        idempotency: { ...idempotency, fingerprint: "second body" },
      }),
    );
    expect(other).toMatchObject({ status: 409, type: "conflict" });
  });

  it("answers how many approved or shipped orders hold a cheese", async () => {
    catalogue.add(141);
    const count = async () =>
      (
        (await callRpc(bus, orderingRpc.activeOrdersForCheese, { cheeseId: 141 }, { timeoutMs: 5000 })) as {
          activeOrders: number;
        }
      ).activeOrders;
    expect(await count()).toBe(0);
    const a = (await place([{ cheeseId: 141, quantity: 1 }])).order;
    const b = (await place([{ cheeseId: 141, quantity: 1 }])).order;
    await expect
      .poll(async () => [await statusOf(a.id), await statusOf(b.id)])
      .toEqual(["approved", "approved"]);
    expect(await count()).toBe(2);
    await call("shipOrder", {
      orderId: a.id,
      actor: operatorClient,
      carrier: "DHL",
      trackingNumber: "1",
      estimatedDelivery: "2030-01-01T00:00:00Z",
    });
    expect(await count()).toBe(2);
    await call("cancelOrder", { orderId: b.id, actor: everyone });
    expect(await count()).toBe(1);
    await call("deliverOrder", { orderId: a.id, actor: operatorClient });
    expect(await count()).toBe(0);
  });
});

describe("the ordering service's process manager", () => {
  it("cancels placed orders of a deleted cheese when cheese.deleted arrives, once", async () => {
    const broker = newBroker();
    const catalogue = fakeCatalogue(broker);
    const running = await orderingOn(broker, { ORDER_AUTO_APPROVE_DELAY: "1h" });
    const bus = broker.connect("test");
    try {
      catalogue.add(1);
      catalogue.add(2);
      const doomed = await placeOneOn(bus, 1);
      const kept = await placeOneOn(bus, 2);
      const event = { id: crypto.randomUUID(), payload: { cheeseId: 1, name: "Cheese 1" } };
      await publishEvent(bus, catalogueEvents.cheeseDeleted, event);
      await publishEvent(bus, catalogueEvents.cheeseDeleted, { ...event, id: crypto.randomUUID() });
      const status = (orderId: number) => statusOn(bus, orderId);
      await expect.poll(() => status(doomed.id)).toBe("cancelled");
      expect(await status(kept.id)).toBe("placed");
    } finally {
      await running.service.stop();
      await catalogue.close();
      running.dataDir.remove();
    }
  });

  it("cancels at the re-check an order whose cheese was sold since placement, saying why", async () => {
    const broker = newBroker();
    const catalogue = fakeCatalogue(broker);
    const running = await orderingOn(broker, { ORDER_AUTO_APPROVE_DELAY: "200ms" });
    const bus = broker.connect("test");
    try {
      catalogue.add(1);
      catalogue.add(2);
      const sold = await placeOneOn(bus, 1);
      const kept = await placeOneOn(bus, 2);
      catalogue.set(1, { status: "sold" });
      const status = (orderId: number) => statusOn(bus, orderId);
      await expect.poll(() => status(sold.id)).toBe("cancelled");
      await expect.poll(() => status(kept.id)).toBe("approved");
    } finally {
      await running.service.stop();
      await catalogue.close();
      running.dataDir.remove();
    }
  });

  it("reviews an order placed before a stop once the service runs again, and retries while the catalogue is down", async () => {
    const broker = newBroker();
    const catalogue = fakeCatalogue(broker);
    const bus = broker.connect("test");
    const clock = new ManualClock();
    const first = await orderingOn(broker, { ORDER_AUTO_APPROVE_DELAY: "300ms" }, undefined, clock);
    catalogue.add(1);
    const order = await placeOneOn(bus, 1);
    await first.service.stop();
    catalogue.setDown(true);
    const second = await orderingOn(broker, { ORDER_AUTO_APPROVE_DELAY: "300ms" }, first.dataDir, clock);
    try {
      const status = () => statusOn(bus, order.id);
      // The review falls due, asks the catalogue, which is down: the order stays placed.
      const asked = catalogue.asked();
      await clock.advance(300);
      await expect.poll(() => catalogue.asked()).toBeGreaterThan(asked);
      expect(await status()).toBe("placed");
      // The retry comes a second later, and the catalogue answers now.
      catalogue.setDown(false);
      await clock.advance(1000);
      await expect.poll(() => status()).toBe("approved");
      // Found placed at start: the review read its placement.
      await expectOutcomeOfPlacement(second.service.wired.store, order.id, "OrderApproved");
    } finally {
      await second.service.stop();
      await catalogue.close();
      first.dataDir.remove();
    }
  });
});
