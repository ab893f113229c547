import { createHash } from "node:crypto";
import {
  type Cheese,
  catalogueEvents,
  customerEvents,
  type Order,
  orderingEvents,
  type WebhookEventKind,
} from "@cheese/contracts";
import type { TypedEvent } from "@cheese/messaging";

/** The integration events that become webhook events (docs/webhooks.md "Event kinds"). */
export const mappedEvents = [
  catalogueEvents.cheeseAdded,
  catalogueEvents.cheeseStatusChanged,
  orderingEvents.orderPlaced,
  orderingEvents.orderApproved,
  orderingEvents.orderShipped,
  orderingEvents.orderDelivered,
  orderingEvents.orderCancelled,
  customerEvents.customerCreated,
  customerEvents.customerUpdated,
  customerEvents.customerStatusChanged,
  customerEvents.apiKeyExpiring,
] as const;

export type MappedEvent = TypedEvent<(typeof mappedEvents)[number]>;

/**
 * The kinds an integration event may become, by subject (what {@link toWebhookEvent} can answer
 * for it): an event none of whose kinds has a subscriber is dropped before it is even parsed.
 */
export const kindsBySubject: ReadonlyMap<string, readonly WebhookEventKind[]> = new Map<
  (typeof mappedEvents)[number]["subject"],
  WebhookEventKind[]
>([
  ["events.catalogue.cheese.added", ["cheese.new_arrival"]],
  [
    "events.catalogue.cheese.status_changed",
    ["cheese.low_stock", "cheese.out_of_stock", "cheese.back_in_stock"],
  ],
  ["events.ordering.order.placed", ["order.placed"]],
  ["events.ordering.order.approved", ["order.confirmed"]],
  ["events.ordering.order.shipped", ["order.shipped"]],
  ["events.ordering.order.delivered", ["order.delivered"]],
  ["events.ordering.order.cancelled", ["order.cancelled"]],
  ["events.customer.customer.created", ["customer.created"]],
  ["events.customer.customer.updated", ["customer.updated"]],
  ["events.customer.customer.status_changed", ["customer.subscription_changed"]],
  ["events.customer.api_key.expiring", ["api_key.expiring"]],
]);

export interface OutgoingEvent {
  kind: WebhookEventKind;
  data: Record<string, unknown>;
}

/**
 * The envelope id of the webhook event an integration event becomes: derived from the
 * integration event's id, so a redelivery, every attempt and every replay carry the same one.
 */
export function eventIdFor(integrationEventId: string): string {
  return `evt_${createHash("sha256").update(`integration:${integrationEventId}`).digest("hex").slice(0, 32)}`;
}

/**
 * The envelope id of a notice the notification service sends about itself (webhook.disabled),
 * derived from the id of the stored event behind it: every replica that reacts to that event
 * plans the same webhook event, so the notice goes out once.
 */
export function noticeEventId(storedEventId: string): string {
  return `evt_${createHash("sha256").update(`notice:${storedEventId}`).digest("hex").slice(0, 32)}`;
}

const stockKinds = {
  pending: "cheese.low_stock",
  sold: "cheese.out_of_stock",
  available: "cheese.back_in_stock",
} as const;

/** Which webhook event an integration event is, if any. `data` keys are snake_case; ids are strings. */
export function toWebhookEvent(event: MappedEvent): OutgoingEvent | undefined {
  switch (event.subject) {
    case "events.catalogue.cheese.added":
      return { kind: "cheese.new_arrival", data: cheeseArrival(event.payload.cheese) };
    case "events.catalogue.cheese.status_changed": {
      const { cheese, from, to } = event.payload;
      if (from === to) return undefined;
      return {
        kind: stockKinds[to],
        data: { cheese_id: String(cheese.id), name: cheese.name, previous_status: from, status: to },
      };
    }
    case "events.ordering.order.placed":
      return { kind: "order.placed", data: orderData(event.payload) };
    case "events.ordering.order.approved":
      return { kind: "order.confirmed", data: orderData(event.payload) };
    case "events.ordering.order.shipped":
      return {
        kind: "order.shipped",
        data: {
          order_id: String(event.payload.order.id),
          tracking_number: event.payload.trackingNumber,
          carrier: event.payload.carrier,
          estimated_delivery: event.payload.estimatedDelivery,
        },
      };
    case "events.ordering.order.delivered":
      return { kind: "order.delivered", data: orderData(event.payload) };
    case "events.ordering.order.cancelled":
      return { kind: "order.cancelled", data: { ...orderData(event.payload), reason: event.payload.reason } };
    case "events.customer.customer.created":
      return { kind: "customer.created", data: customerData(event.payload) };
    case "events.customer.customer.updated":
      return { kind: "customer.updated", data: customerData(event.payload) };
    case "events.customer.customer.status_changed": {
      const { from, to } = event.payload;
      if (from === to) return undefined;
      return {
        kind: "customer.subscription_changed",
        data: { ...customerData(event.payload), previous_customer_status: from, customer_status: to },
      };
    }
    case "events.customer.api_key.expiring":
      return {
        kind: "api_key.expiring",
        data: {
          ...customerData(event.payload),
          key_id: event.payload.keyId,
          key_prefix: event.payload.prefix,
          expires_at: event.payload.expiresAt,
        },
      };
    default:
      return undefined;
  }
}

function cheeseArrival(cheese: Cheese): Record<string, unknown> {
  return {
    cheese_id: String(cheese.id),
    name: cheese.name,
    status: cheese.status,
    category: cheese.category?.name ?? null,
    tags: (cheese.tags ?? []).map((tag) => tag.name),
    origin: cheese.origin ?? null,
    price_per_kg: cheese.pricePerKg ?? null,
    organic: cheese.organic ?? false,
  };
}

/** No shipping address: receivers get ids and business facts, personal data stays with us. */
function orderData({
  order,
  customerId,
}: {
  order: Order;
  customerId: number | null;
}): Record<string, unknown> {
  return {
    order_id: String(order.id),
    customer_id: customerId === null ? null : String(customerId),
    status: order.status,
    total: order.total,
    items: order.items.map((item) => ({
      cheese_id: String(item.cheeseId),
      cheese_name: item.cheeseName,
      quantity: item.quantity,
      price_per_kg: item.pricePerKg,
    })),
    updated_at: order.updatedAt,
  };
}

function customerData({ customerId, username }: { customerId: number; username: string }) {
  return { customer_id: String(customerId), username };
}

/** The exact bytes of a delivery body. */
export function envelopeBody(
  eventId: string,
  kind: WebhookEventKind,
  createdAt: string,
  data: unknown,
): string {
  return JSON.stringify({ id: eventId, type: kind, created_at: createdAt, data });
}
