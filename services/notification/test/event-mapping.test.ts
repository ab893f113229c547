import { webhookEventData } from "@cheese/contracts";
import { describe, expect, it } from "vitest";
import {
  eventIdFor,
  kindsBySubject,
  type MappedEvent,
  mappedEvents,
  toWebhookEvent,
} from "../src/domain/event-mapping.ts";

const cheese = {
  id: 42,
  name: "Comté",
  category: { id: 3, name: "Hard" },
  tags: [{ id: 8, name: "cow" }],
  status: "available" as const,
  origin: "FR",
  pricePerKg: 31.5,
  organic: true,
  photoUrls: [],
};
const order = {
  id: 7,
  items: [{ cheeseId: 42, cheeseName: "Comté", quantity: 2, pricePerKg: 31.5 }],
  shippingAddress: { street: "1 Rue", city: "Dole", country: "FR" },
  status: "placed" as const,
  notes: null,
  total: 63,
  shipDate: null,
  createdAt: "2026-03-01T10:00:00.000Z",
  updatedAt: "2026-03-01T10:00:00.000Z",
};

const event = (subject: string, payload: unknown) =>
  ({ id: "e-1", subject, payload, headers: {}, deliveryCount: 1 }) as MappedEvent;

describe("integration events to webhook kinds (docs/webhooks.md)", () => {
  const cases: [string, unknown, string][] = [
    ["events.catalogue.cheese.added", { cheese }, "cheese.new_arrival"],
    [
      "events.catalogue.cheese.status_changed",
      { cheese, from: "available", to: "pending" },
      "cheese.low_stock",
    ],
    [
      "events.catalogue.cheese.status_changed",
      { cheese, from: "available", to: "sold" },
      "cheese.out_of_stock",
    ],
    [
      "events.catalogue.cheese.status_changed",
      { cheese, from: "sold", to: "available" },
      "cheese.back_in_stock",
    ],
    ["events.ordering.order.placed", { order, customerId: 5 }, "order.placed"],
    [
      "events.ordering.order.approved",
      { order: { ...order, status: "approved" }, customerId: 5 },
      "order.confirmed",
    ],
    [
      "events.ordering.order.shipped",
      {
        order,
        customerId: 5,
        trackingNumber: "1Z999",
        carrier: "UPS",
        estimatedDelivery: "2026-03-04T00:00:00.000Z",
      },
      "order.shipped",
    ],
    ["events.ordering.order.delivered", { order, customerId: null }, "order.delivered"],
    [
      "events.ordering.order.cancelled",
      { order, customerId: 5, reason: "customer request" },
      "order.cancelled",
    ],
    ["events.customer.customer.created", { customerId: 9, username: "alice" }, "customer.created"],
    ["events.customer.customer.updated", { customerId: 9, username: "alice" }, "customer.updated"],
    [
      "events.customer.customer.status_changed",
      { customerId: 9, username: "alice", from: "bronze", to: "silver" },
      "customer.subscription_changed",
    ],
    [
      "events.customer.api_key.expiring",
      {
        customerId: 9,
        username: "alice",
        keyId: "k1",
        prefix: "ck_ab12",
        expiresAt: "2026-04-01T00:00:00.000Z",
      },
      "api_key.expiring",
    ],
  ];

  it.each(cases)("%s becomes the right kind, with data as documented", (subject, payload, kind) => {
    const outgoing = toWebhookEvent(event(subject, payload));
    expect(outgoing?.kind).toBe(kind);
    // Events whose kinds nobody subscribes to are dropped by subject: the list must hold it.
    expect(kindsBySubject.get(subject)).toContain(kind);
    const schema = webhookEventData[kind as keyof typeof webhookEventData].schema;
    expect(schema.strict().safeParse(outgoing?.data).success, JSON.stringify(outgoing?.data)).toBe(true);
  });

  it("names the kinds of every integration event it consumes, each one it becomes above", () => {
    expect([...kindsBySubject.keys()].sort()).toEqual(mappedEvents.map((d) => d.subject).sort());
    // Every kind a subject is said to become is one it does become: no kind is waited for in vain.
    const become = new Map<string, Set<string>>();
    for (const [subject, , kind] of cases) become.set(subject, (become.get(subject) ?? new Set()).add(kind));
    for (const [subject, kinds] of kindsBySubject)
      expect([...kinds].sort()).toEqual([...(become.get(subject) ?? [])].sort());
  });

  it("gives order.shipped exactly its documented fields, ids as strings", () => {
    const outgoing = toWebhookEvent(
      event("events.ordering.order.shipped", {
        order,
        customerId: 5,
        trackingNumber: "1Z999",
        carrier: "UPS",
        estimatedDelivery: "2026-03-04T00:00:00.000Z",
      }),
    );
    expect(outgoing?.data).toEqual({
      order_id: "7",
      tracking_number: "1Z999",
      carrier: "UPS",
      estimated_delivery: "2026-03-04T00:00:00.000Z",
    });
  });

  it("gives order data snake_case keys and string ids, without the shipping address, sealed or not", () => {
    const outgoing = toWebhookEvent(
      event("events.ordering.order.placed", { order, customerId: 5, personal: "sealed-by-customer" }),
    );
    expect(outgoing?.data).toEqual({
      order_id: "7",
      customer_id: "5",
      status: "placed",
      total: 63,
      items: [{ cheese_id: "42", cheese_name: "Comté", quantity: 2, price_per_kg: 31.5 }],
      updated_at: order.updatedAt,
    });
    expect(JSON.stringify(outgoing)).not.toContain("Dole");
    expect(JSON.stringify(outgoing)).not.toContain("sealed-by-customer");
  });

  it("gives the stock kinds the previous and new status", () => {
    const outgoing = toWebhookEvent(
      event("events.catalogue.cheese.status_changed", { cheese, from: "pending", to: "sold" }),
    );
    expect(outgoing?.data).toEqual({
      cheese_id: "42",
      name: "Comté",
      previous_status: "pending",
      status: "sold",
    });
  });

  it("sends nothing when a status did not really change", () => {
    expect(
      toWebhookEvent(event("events.catalogue.cheese.status_changed", { cheese, from: "sold", to: "sold" })),
    ).toBeUndefined();
    expect(
      toWebhookEvent(
        event("events.customer.customer.status_changed", {
          customerId: 1,
          username: "a",
          from: "gold",
          to: "gold",
        }),
      ),
    ).toBeUndefined();
  });

  it("derives a stable event id from the integration event id", () => {
    expect(eventIdFor("0b6f-1")).toBe(eventIdFor("0b6f-1"));
    expect(eventIdFor("0b6f-1")).not.toBe(eventIdFor("0b6f-2"));
    expect(eventIdFor("0b6f-1")).toMatch(/^evt_[0-9a-f]{32}$/);
  });
});
