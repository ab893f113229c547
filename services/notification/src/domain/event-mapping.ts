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
import type { Decider, DomainEvent } from "@cheese/service-kit";

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

type PayloadOf<Subject extends MappedEvent["subject"]> = Extract<
  MappedEvent,
  { subject: Subject }
>["payload"];

/** What one integration event becomes: the kinds it may become, and which one (with its data). */
interface Mapping<Payload> {
  kinds: readonly WebhookEventKind[];
  to(payload: Payload): OutgoingEvent | undefined;
}

/** A mapping whose answer can only be one of its `kinds`. */
const mapping = <Payload, const Kind extends WebhookEventKind>(
  kinds: readonly Kind[],
  to: (payload: Payload) => { kind: NoInfer<Kind>; data: Record<string, unknown> } | undefined,
): Mapping<Payload> => ({ kinds, to });

/** Per subject of a mapped event: its kinds, and the webhook event it becomes, if any. */
const mappings: { [Subject in MappedEvent["subject"]]: Mapping<PayloadOf<Subject>> } = {
  "events.catalogue.cheese.added": mapping(["cheese.new_arrival"], ({ cheese }) => ({
    kind: "cheese.new_arrival",
    data: cheeseArrival(cheese),
  })),
  "events.catalogue.cheese.status_changed": mapping(Object.values(stockKinds), ({ cheese, from, to }) =>
    from === to
      ? undefined
      : {
          kind: stockKinds[to],
          data: { cheese_id: String(cheese.id), name: cheese.name, previous_status: from, status: to },
        },
  ),
  "events.ordering.order.placed": mapping(["order.placed"], (payload) => ({
    kind: "order.placed",
    data: orderData(payload),
  })),
  "events.ordering.order.approved": mapping(["order.confirmed"], (payload) => ({
    kind: "order.confirmed",
    data: orderData(payload),
  })),
  "events.ordering.order.shipped": mapping(["order.shipped"], (payload) => ({
    kind: "order.shipped",
    data: {
      order_id: String(payload.order.id),
      tracking_number: payload.trackingNumber,
      carrier: payload.carrier,
      estimated_delivery: payload.estimatedDelivery,
    },
  })),
  "events.ordering.order.delivered": mapping(["order.delivered"], (payload) => ({
    kind: "order.delivered",
    data: orderData(payload),
  })),
  "events.ordering.order.cancelled": mapping(["order.cancelled"], (payload) => ({
    kind: "order.cancelled",
    data: { ...orderData(payload), reason: payload.reason },
  })),
  "events.customer.customer.created": mapping(["customer.created"], (payload) => ({
    kind: "customer.created",
    data: customerData(payload),
  })),
  "events.customer.customer.updated": mapping(["customer.updated"], (payload) => ({
    kind: "customer.updated",
    data: customerData(payload),
  })),
  "events.customer.customer.status_changed": mapping(["customer.subscription_changed"], (payload) =>
    payload.from === payload.to
      ? undefined
      : {
          kind: "customer.subscription_changed",
          data: {
            ...customerData(payload),
            previous_customer_status: payload.from,
            customer_status: payload.to,
          },
        },
  ),
  "events.customer.api_key.expiring": mapping(["api_key.expiring"], (payload) => ({
    kind: "api_key.expiring",
    data: {
      ...customerData(payload),
      key_id: payload.keyId,
      key_prefix: payload.prefix,
      expires_at: payload.expiresAt,
    },
  })),
};

/**
 * The kinds an integration event may become, by subject (what {@link toWebhookEvent} can answer
 * for it): an event none of whose kinds has a subscriber is dropped before it is even parsed.
 */
export const kindsBySubject: ReadonlyMap<string, readonly WebhookEventKind[]> = new Map(
  Object.entries(mappings).map(([subject, { kinds }]) => [subject, kinds]),
);

/** Which webhook event an integration event is, if any. `data` keys are snake_case; ids are strings. */
export function toWebhookEvent(event: MappedEvent): OutgoingEvent | undefined {
  // Each subject's mapping takes that subject's payload; one of another subject is none of ours.
  const mapped = mappings[event.subject] as Mapping<MappedEvent["payload"]> | undefined;
  return mapped?.to(event.payload);
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

/**
 * One outgoing event and the deliveries planned for it, recorded in the append that creates
 * them (ahead of them where the store writes streams one after the other). A redelivered
 * integration event finds this record and re-creates only the missing deliveries, with the same
 * ids, so a crash half way through a fan-out neither loses nor doubles one.
 */
export interface RecordedWebhookEvent {
  eventId: string;
  type: WebhookEventKind;
  createdAt: string;
  /** The exact JSON sent to every receiver; signatures are computed over these bytes. */
  body: string;
  /** The revision of the event in its aggregate's stream, when the integration event said it. */
  revision?: number;
  /** `lane`: the ordered lane's stream, for a registration that was ordered (domain/lane.ts). */
  deliveries: { webhookId: number; deliveryId: number; lane?: string }[];
}

export type WebhookEventEvent = DomainEvent<"WebhookEventRecorded", RecordedWebhookEvent>;
export type WebhookEventCommand = { type: "Record"; event: RecordedWebhookEvent };
export type WebhookEventState = { recorded: RecordedWebhookEvent | undefined };

/** `evt_<32 hex>`; the stream is keyed by the hex part. */
export const webhookEventStream = (eventId: string) => `webhookevent-${eventId.replace(/^evt_/, "")}`;

export const webhookEventDecider: Decider<WebhookEventState, WebhookEventCommand, WebhookEventEvent> = {
  initialState: () => ({ recorded: undefined }),
  evolve: (state, event) => (event.type === "WebhookEventRecorded" ? { recorded: event.data } : state),
  // Recording twice keeps the first plan: that is what makes the fan-out idempotent.
  decide: (command, state) => (state.recorded ? [] : [{ type: "WebhookEventRecorded", data: command.event }]),
};
