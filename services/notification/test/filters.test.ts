import { notificationRpc, webhookEventExample } from "@cheese/contracts";
import { metricsRegistry } from "@cheese/service-kit";
import { type ServiceSpec, serviceSpec } from "@cheese/service-kit/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkFilter, compileFilter } from "../src/domain/filter.ts";
import { webhookDecider } from "../src/domain/webhook.ts";
import { fanOut } from "../src/handlers/fan-out.ts";
import { previewFilter } from "../src/handlers/filter-preview.ts";
import { notificationService } from "../src/main.ts";
import { notificationDeps, notificationStores, registerWebhook, t0 } from "./support.ts";

const at = "2026-11-22T10:00:00.000Z";
const url = "http://127.0.0.1:9/hooks";
const bigOrders = 'type == "order.placed" && data.total > 100.0';
const refusedFilter = (message: unknown) => ({
  status: 422,
  errors: [{ field: "filter", message }],
});

describe("payload filters at registration (given/when/then)", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(notificationService, {
      start: at,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_DELAYS: "1h" },
    });
  });
  afterEach(async () => {
    await spec.stop();
  });

  const create = (filter: string, events: ("order.placed" | "cheese.low_stock")[] = ["order.placed"]) =>
    spec.given().when(notificationRpc.createWebhook, { url, events, description: null, filter });

  it("records the filter and answers it with the registration", async () => {
    await create(bigOrders).thenReturns({
      reply: { id: 1, filter: bigOrders },
      events: {
        "webhook-1": [
          { type: "WebhookRegistered", data: expect.objectContaining({ webhookId: 1, filter: bigOrders }) },
        ],
      },
    });
  });

  it("refuses a filter that does not parse, naming filter", async () => {
    await create("type ==").thenRefuses(refusedFilter(expect.stringContaining("not a CEL expression")));
  });

  it("refuses a filter that does not type-check against the envelope", async () => {
    await create("type > 3").thenRefuses(refusedFilter(expect.stringContaining("does not type-check")));
    await create("total > 100.0").thenRefuses(refusedFilter(expect.stringContaining("does not type-check")));
    await create("data.total").thenRefuses(refusedFilter(expect.stringContaining("not a bool")));
  });

  it("refuses a field none of the registration's kinds has, and allows one that only some have", async () => {
    await create("data.totl > 100.0").thenRefuses(refusedFilter(expect.stringContaining("none of")));
    await create("data.total > 100.0", ["order.placed", "cheese.low_stock"]).thenReturns({
      reply: { filter: "data.total > 100.0" },
    });
  });

  it("refuses a filter past the bounds that keep one evaluation short", async () => {
    await create(`type == "${"x".repeat(1024)}"`).thenRefuses(
      refusedFilter("must be at most 1024 characters"),
    );
    await create("[1].all(a, [1].all(b, [1].all(c, true)))").thenRefuses(
      refusedFilter(expect.stringContaining("nest comprehensions")),
    );
    const written = (n: number) => `[${Array.from({ length: n }, () => "1").join(",")}]`;
    await create(`${written(33)}.all(a, a == 1)`).thenRefuses(
      refusedFilter("may write out lists of at most 32 elements"),
    );
    await create(`${written(32)}.all(a, ${written(32)}.all(b, a == b))`).thenReturns({});
  });

  it("changes the filter with PATCH, checks it against the new kinds, and removes it with null", async () => {
    const patch = (changes: { filter?: string | null; events?: ["customer.created"] }) =>
      spec.given().when(notificationRpc.updateWebhook, { webhookId: 1, ...changes });
    await create("data.total > 100.0").thenReturns({});
    await patch({ filter: "type ==" }).thenRefuses(
      refusedFilter(expect.stringContaining("not a CEL expression")),
      ["webhook-1"],
    );
    // The kinds change and the filter no longer fits any of them.
    await patch({ events: ["customer.created"] }).thenRefuses(
      refusedFilter(expect.stringContaining("none of customer.created")),
      ["webhook-1"],
    );
    await patch({ filter: bigOrders }).thenReturns({
      reply: { filter: bigOrders },
      events: {
        "webhook-1": [{ type: "WebhookUpdated", data: { webhookId: 1, filter: bigOrders, updatedAt: at } }],
      },
    });
    await patch({ filter: bigOrders }).thenReturns({ events: { "webhook-1": [] } });
    await patch({ filter: null }).thenReturns({
      reply: { filter: null },
      events: {
        "webhook-1": [{ type: "WebhookUpdated", data: { webhookId: 1, filter: null, updatedAt: at } }],
      },
    });
  });

  it("answers filter-preview's 422 for a bad filter", async () => {
    await spec
      .given()
      .when(notificationRpc.previewFilter, { filter: "data.", limit: 50 })
      .thenRefuses(refusedFilter(expect.stringContaining("not a CEL expression")));
  });
});

describe("the registration decider and filters", () => {
  const registration = {
    webhookId: 1,
    url,
    events: ["order.placed" as const],
    description: null,
    secret: { v: 1, iv: "", tag: "", data: "" } as never,
    signatureAlgorithms: ["hmac-sha256" as const],
    createdAt: t0,
  };
  const registered = webhookDecider.evolve(webhookDecider.initialState(), {
    type: "WebhookRegistered",
    data: registration,
  });
  const update = (filter: string | null) =>
    webhookDecider.decide({ type: "Update", webhookId: 1, changes: { filter }, now: t0 }, registered);

  it("records nothing when a registration made without a filter is told to have none", () => {
    expect(update(null)).toEqual([]);
  });

  it("records a new filter, and nothing when it is the same", () => {
    const [changed] = update(bigOrders);
    expect(changed).toEqual({
      type: "WebhookUpdated",
      data: { webhookId: 1, filter: bigOrders, updatedAt: t0 },
    });
    const filtered = webhookDecider.evolve(registered, changed!);
    expect(
      webhookDecider.decide(
        { type: "Update", webhookId: 1, changes: { filter: bigOrders }, now: t0 },
        filtered,
      ),
    ).toEqual([]);
  });
});

describe("an event a filter rejects (fanOut, previewFilter)", () => {
  const stores = notificationStores("filters");

  it("is not planned for that registration, is counted, and filter-preview shows how it was judged", async () => {
    const { store, secrets } = stores;
    const webhooks = await stores.startWebhooks();
    const deps = notificationDeps(stores, { webhooks, deliveries: webhooks });
    await registerWebhook(store, secrets, {
      webhookId: 1,
      events: ["order.placed"],
      createdAt: t0,
      filter: bigOrders,
    });
    await registerWebhook(store, secrets, { webhookId: 2, events: ["order.placed"], createdAt: t0 });
    const counted = async () =>
      (await metricsRegistry.getSingleMetric("cheese_webhook_events_filtered_total")?.get())?.values.find(
        (value) => value.labels.outcome === "rejected",
      )?.value ?? 0;
    const before = await counted();

    const placed = (eventId: string, total: number) =>
      fanOut(deps, { eventId, kind: "order.placed", data: { order_id: eventId, total } }, {});
    const big = await placed("evt_big", 150.5);
    const small = await placed("evt_small", 20);

    expect(big?.deliveries.map((d) => d.webhookId)).toEqual([1, 2]);
    expect(small?.deliveries.map((d) => d.webhookId)).toEqual([2]);
    expect(await counted()).toBe(before + 1);

    expect(await previewFilter(deps, { filter: "data.total > 100.0", limit: 50 })).toEqual({
      matched: 1,
      total: 2,
      items: [
        { id: "evt_small", type: "order.placed", created_at: t0, matched: false },
        { id: "evt_big", type: "order.placed", created_at: t0, matched: true },
      ],
    });
    const limited = await previewFilter(deps, { filter: "true", events: ["order.placed"], limit: 1 });
    expect(limited.items.map((item) => item.id)).toEqual(["evt_small"]);
    const otherKind = await previewFilter(deps, { filter: "true", events: ["cheese.low_stock"], limit: 50 });
    expect(otherKind).toEqual({ matched: 0, total: 0, items: [] });
  });

  it("accepts the filters docs/webhooks.md shows", () => {
    for (const filter of [
      bigOrders,
      'data.items.exists(i, i.cheese_name.startsWith("Comté"))',
      'type != "order.placed" || data.customer_id != null',
    ])
      expect(
        checkFilter(filter, ["order.placed"])(webhookEventExample("order.placed")).error,
      ).toBeUndefined();
  });

  it("does not match an event on which the filter cannot be evaluated; a guard avoids the error", () => {
    const lowStock = { type: "cheese.low_stock", created_at: t0, data: { cheese_id: "1" } };
    expect(compileFilter("data.total > 100.0")(lowStock)).toEqual({
      matched: false,
      error: expect.stringContaining("total"),
    });
    expect(compileFilter(bigOrders)(lowStock)).toEqual({ matched: false });
    expect(compileFilter("has(data.total) && data.total > 100.0")(lowStock)).toEqual({ matched: false });
    expect(compileFilter("timestamp(created_at) >= timestamp('2026-01-01T00:00:00Z')")(lowStock)).toEqual({
      matched: true,
    });
  });
});
