import { Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { serviceMetrics } from "./support/metrics.ts";
import { createCheese, http, orderBody, registerCustomer } from "./support/orders.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

const bigOrders = 'type == "order.placed" && data.total > 100.0';

/**
 * Payload filters (docs/webhooks.md "Payload filters") on the multi-process system: a CEL filter
 * keeps the events it rejects from its registration, bad filters are 422 naming `filter`, and
 * filter-preview judges the events really recorded. Runs with E2E_REPLICAS=2 too.
 */
describe("webhook payload filters", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  const { api } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));
  const metrics = serviceMetrics(() => system);
  const rejected = () =>
    metrics.total("notification", "cheese_webhook_events_filtered_total", { outcome: "rejected" });

  beforeAll(async () => {
    receiver = await Receiver.start();
    // LOG_LEVEL info: each process logs its health port, where its /metrics are.
    system = await startSystem({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "info" } });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const register = async (path: string, body: Record<string, unknown> = {}) => {
    const response = await api("POST", "/webhooks", {
      url: receiver.url(path),
      events: ["order.placed"],
      ...body,
    });
    expect(response.status).toBe(201);
    return json(response);
  };
  /** The order.placed envelopes a path received. */
  const placedAt = (path: string) =>
    receiver
      .requests(path)
      .map((request) => JSON.parse(request.rawBody.toString()))
      .filter((envelope) => envelope.type === "order.placed");
  const arrivedAt = async (path: string, orderId: number) => {
    const find = () => placedAt(path).find((envelope) => envelope.data.order_id === String(orderId));
    await expect.poll(find, { timeout: 20_000, message: `order ${orderId} at ${path}` }).toBeDefined();
    return find()!;
  };
  const placeOrder = async (pricePerKg: number) => {
    const customer = await registerCustomer(system);
    const cheese = await createCheese(system, auth.bearer, { pricePerKg });
    const response = await http(system).post(
      "/store/order",
      orderBody([{ cheeseId: cheese.id, quantity: 1 }]),
      customer.bearer,
    );
    expect(response.status).toBe(201);
    return (await json(response)).id as number;
  };

  it("delivers a big order's order.placed to a registration filtering on the total, and not a small one's", async () => {
    const filtered = await register("/big", { filter: bigOrders });
    expect(filtered.filter).toBe(bigOrders);
    await register("/every");
    const rejectedBefore = await rejected();

    const big = await placeOrder(150);
    const small = await placeOrder(20);
    // The unfiltered registration got both: both events have been fanned out, once for good.
    const bigEvent = await arrivedAt("/every", big);
    const smallEvent = await arrivedAt("/every", small);
    expect(bigEvent.data.total).toBeGreaterThan(100);
    expect(smallEvent.data.total).toBeLessThanOrEqual(100);
    expect((await arrivedAt("/big", big)).id).toBe(bigEvent.id);
    expect(placedAt("/big").map((envelope) => envelope.data.order_id)).not.toContain(String(small));
    // Rejected is not failed: no delivery at all (nothing to retry or dead-letter), only a count.
    const deliveries = await json(await api("GET", `/webhooks/${filtered.id}/deliveries?limit=100`));
    expect(deliveries.items.map((d: { eventId: string }) => d.eventId)).toEqual([bigEvent.id]);
    expect((await rejected()) - rejectedBefore).toBeGreaterThanOrEqual(1);
    // Nor logged as a warning or an error, on any process.
    const warnings = system
      .output()
      .split("\n")
      .filter((line) => line.includes(smallEvent.id) && /"level":(4|5|6)0\b/.test(line));
    expect(warnings).toEqual([]);

    // filter-preview judges the very events recorded, newest first.
    const preview = await api("POST", "/webhooks/filter-preview", {
      filter: "data.total > 100.0",
      events: ["order.placed"],
    });
    expect(preview.status).toBe(200);
    const body = await json(preview);
    expect(body.total).toBe(body.items.length);
    expect(body.matched).toBe(body.items.filter((item: { matched: boolean }) => item.matched).length);
    const judged = Object.fromEntries(
      body.items.map((item: { id: string; matched: boolean }) => [item.id, item]),
    );
    expect(judged[bigEvent.id]).toEqual({
      id: bigEvent.id,
      type: "order.placed",
      created_at: bigEvent.created_at,
      matched: true,
    });
    expect(judged[smallEvent.id]).toMatchObject({ matched: false });
    const limited = await json(
      await api("POST", "/webhooks/filter-preview", { filter: "true", events: ["order.placed"], limit: 1 }),
    );
    expect(limited).toMatchObject({ matched: 1, total: 1 });

    // Without its filter the registration gets small orders too.
    const unfiltered = await api("PATCH", `/webhooks/${filtered.id}`, { filter: null });
    expect(unfiltered.status).toBe(200);
    expect((await json(unfiltered)).filter).toBeNull();
    const later = await placeOrder(20);
    await arrivedAt("/big", later);
  });

  it("refuses a filter that does not parse or type-check with a 422 naming filter", async () => {
    const refusal = async (response: Response) => {
      expect(response.status).toBe(422);
      const body = await json(response);
      expect(body).toMatchObject({ code: 422, errors: [{ field: "filter", message: expect.any(String) }] });
    };
    await refusal(
      await api("POST", "/webhooks", {
        url: receiver.url("/x"),
        events: ["order.placed"],
        filter: "type ==",
      }),
    );
    await refusal(
      await api("POST", "/webhooks", {
        url: receiver.url("/x"),
        events: ["order.placed"],
        filter: "type > 3",
      }),
    );
    await refusal(
      await api("POST", "/webhooks", {
        url: receiver.url("/x"),
        events: ["order.placed"],
        filter: `type == "${"x".repeat(1100)}"`,
      }),
    );
    const created = await register("/patched");
    await refusal(await api("PATCH", `/webhooks/${created.id}`, { filter: "data.totl > 1.0" }));
    expect((await json(await api("GET", `/webhooks/${created.id}`))).filter).toBeNull();
    await refusal(await api("POST", "/webhooks/filter-preview", { filter: "data." }));
  });
});
