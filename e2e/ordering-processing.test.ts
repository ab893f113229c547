import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { busAs } from "./support/nats-identity.ts";
import { createCheese, type Headers, http, orderBody, waitForStatus } from "./support/orders.ts";
import { json, type RunningSystem, startSystem, waitUntilReady } from "./support/system.ts";

interface WebhookEvent {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/**
 * The asynchronous side of orders with two replicas of every service (two gateways behind the
 * balancer, two ordering processes) and ORDER_AUTO_APPROVE_DELAY=2s: the re-check, its
 * durability across a crash, once-only processing, and the events every transition sends.
 */
describe("order processing with two replicas", () => {
  let system: RunningSystem;
  let operator: { apiKey: Headers; bearer: Headers };
  let api: ReturnType<typeof http>;
  let receiver: Server;
  const received: WebhookEvent[] = [];
  let bus: Awaited<ReturnType<typeof busAs>>;
  /** Ordering's integration events in the order they were published (one durable, one at a time). */
  const published: { subject: string; id: string; orderId: number }[] = [];
  /** Status of POST /webhooks; the tests reading events check it first. */
  let registration = 0;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on("end", () => {
        try {
          received.push(JSON.parse(body) as WebhookEvent);
        } catch {}
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    system = await startSystem({
      env: { REPLICAS: "2", ORDER_AUTO_APPROVE_DELAY: "2s", WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    });
    operator = await operatorHeaders(system);
    api = http(system);
    bus = await busAs(system, "notification");
    bus.consume({
      durable: `e2e-ordering-${randomUUID().slice(0, 8)}`,
      subjects: ["events.ordering.order.>"],
      handler: async (event) => {
        const { order } = event.payload as { order: { id: number } };
        published.push({ subject: event.subject, id: event.id, orderId: order.id });
      },
    });
    const registered = await api.post(
      "/webhooks",
      {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
        events: ["order.placed", "order.confirmed", "order.shipped", "order.delivered", "order.cancelled"],
      },
      operator.apiKey,
    );
    registration = registered.status;
  });
  afterAll(async () => {
    await bus?.close();
    await system?.stop();
    receiver?.close();
  });

  const place = async (cheeseId: number, headers: Headers = operator.bearer) => {
    const response = await api.post("/store/order", orderBody([{ cheeseId, quantity: 2 }]), headers);
    expect(response.status).toBe(201);
    return json(response);
  };
  /** Distinct webhook events (a retried delivery repeats its id) of one kind for one order. */
  const eventsOf = (type: string, orderId: number) => {
    expect(registration, "POST /webhooks").toBe(201);
    return eventsOfKind(type, orderId);
  };
  const eventsOfKind = (type: string, orderId: number) => [
    ...new Map(
      received.filter((e) => e.type === type && e.data.order_id === String(orderId)).map((e) => [e.id, e]),
    ).values(),
  ];

  it("runs two ordering processes", () => {
    expect(system.pids().ordering).toHaveLength(2);
    expect(system.pids().gateway).toHaveLength(2);
  });

  it("finds every order on a GET right after its 201, whichever replicas answer", async () => {
    const cheese = await createCheese(system, operator.bearer);
    for (let i = 0; i < 20; i++) {
      const order = await place(cheese.id);
      const read = await api.get(`/store/order/${order.id}`, operator.apiKey);
      expect(read.status, `order ${order.id}`).toBe(200);
      expect(await json(read)).toEqual(order);
    }
  });

  it("approves each order once after the delay, though two replicas watch it", async () => {
    const cheese = await createCheese(system, operator.bearer);
    const orders = await Promise.all(Array.from({ length: 10 }, () => place(cheese.id)));
    for (const order of orders) {
      const approved = await waitForStatus(system, order.id, "approved", operator.apiKey);
      // Not before the delay (2 s) has passed since placement.
      expect(Date.parse(approved.updatedAt) - Date.parse(order.createdAt)).toBeGreaterThanOrEqual(2000);
    }
    // Each order then shipped: whatever ordering published about an order before its shipment
    // (a second approval included, were there one) is published before order.shipped.
    const shipment = { carrier: "DHL", trackingNumber: "JD1", estimatedDelivery: "2030-01-01T00:00:00Z" };
    for (const order of orders) {
      expect((await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer)).status).toBe(200);
    }
    const shipped = () =>
      new Set(published.filter((e) => e.subject === "events.ordering.order.shipped").map((e) => e.orderId));
    await expect.poll(() => orders.every((order) => shipped().has(order.id))).toBe(true);
    for (const order of orders) {
      const about = (subject: string) =>
        new Set(published.filter((e) => e.orderId === order.id && e.subject === subject).map((e) => e.id));
      expect(about("events.ordering.order.approved"), `order ${order.id}`).toHaveProperty("size", 1);
      expect(about("events.ordering.order.cancelled")).toHaveProperty("size", 0);
    }
    await expect
      .poll(() => orders.map((order) => eventsOf("order.confirmed", order.id).length))
      .toEqual(orders.map(() => 1));
  });

  it("cancels at the re-check an order whose cheese is no longer available", async () => {
    const sold = await createCheese(system, operator.bearer);
    const kept = await createCheese(system, operator.bearer);
    const doomed = await place(sold.id);
    const fine = await place(kept.id);
    const update = await api.post(`/cheeses/${sold.id}?status=sold`, {}, operator.bearer);
    expect(update.status).toBe(200);
    const cancelled = await waitForStatus(system, doomed.id, "cancelled", operator.apiKey);
    expect(cancelled.items).toEqual(doomed.items);
    await waitForStatus(system, fine.id, "approved", operator.apiKey);
    await expect
      .poll(() => eventsOf("order.cancelled", doomed.id)[0]?.data.reason)
      .toContain(String(sold.id));
  });

  it("still processes an order placed just before every ordering process is killed", async () => {
    const cheese = await createCheese(system, operator.bearer);
    const victims = system.pids().ordering ?? [];
    const order = await place(cheese.id);
    for (const pid of victims) process.kill(pid, "SIGKILL");

    await expect
      .poll(
        () => {
          const now = system.pids().ordering ?? [];
          return now.length === victims.length && !now.some((pid) => victims.includes(pid));
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    await waitUntilReady(system.rootUrl, 30_000);
    await waitForStatus(system, order.id, "approved", operator.apiKey, 30_000);
    await expect.poll(() => eventsOf("order.confirmed", order.id)).toHaveLength(1);
  });

  it("sends an event for every transition, with what receivers need", async () => {
    const cheese = await createCheese(system, operator.bearer, { pricePerKg: 12.5 });
    const order = await place(cheese.id);
    await waitForStatus(system, order.id, "approved", operator.apiKey);
    const shipment = {
      carrier: "DHL",
      trackingNumber: "JD014600006281230704",
      estimatedDelivery: "2030-05-01T12:00:00Z",
    };
    expect((await api.post(`/store/order/${order.id}/ship`, shipment, operator.bearer)).status).toBe(200);
    expect((await api.post(`/store/order/${order.id}/deliver`, {}, operator.bearer)).status).toBe(200);
    const second = await place(cheese.id);
    expect((await api.delete(`/store/order/${second.id}`, operator.bearer)).status).toBe(204);

    const first = (type: string, orderId: number) => () => eventsOf(type, orderId)[0]?.data;
    await expect
      .poll(first("order.placed", order.id))
      .toMatchObject({ order_id: String(order.id), status: "placed", total: 25 });
    await expect.poll(first("order.confirmed", order.id)).toMatchObject({ status: "approved", total: 25 });
    await expect.poll(first("order.shipped", order.id)).toMatchObject({
      order_id: String(order.id),
      tracking_number: shipment.trackingNumber,
      carrier: shipment.carrier,
      estimated_delivery: shipment.estimatedDelivery,
    });
    await expect.poll(first("order.delivered", order.id)).toMatchObject({ status: "delivered", total: 25 });
    await expect
      .poll(first("order.cancelled", second.id))
      .toMatchObject({ order_id: String(second.id), status: "cancelled" });
  });

  it("makes one order of ten concurrent requests with one Idempotency-Key, across both gateways", async () => {
    const cheese = await createCheese(system, operator.bearer);
    const key = randomUUID();
    const before = (await json(await api.get("/store/orders?limit=1", operator.apiKey))).total;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.post("/store/order", orderBody([{ cheeseId: cheese.id, quantity: 3 }]), {
          ...operator.bearer,
          "idempotency-key": key,
        }),
      ),
    );
    const bodies = await Promise.all(responses.map((r) => r.text()));
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(new Set(bodies).size).toBe(1);
    expect((await json(await api.get("/store/orders?limit=1", operator.apiKey))).total).toBe(before + 1);
  });
});
