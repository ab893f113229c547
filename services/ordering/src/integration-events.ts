import { orderingEvents } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";
import type { OrderEvent } from "./domain/order.ts";

/**
 * Every order transition becomes the integration event of the same name, with the order as it
 * now stands and its customer (docs/webhooks.md "Event kinds": order.placed / confirmed / shipped
 * / delivered / cancelled). A customer's address and notes go as the events hold them: redacted in
 * `order`, sealed under the customer's key in `personal`, never opened, so the `EVENTS` stream
 * keeps nothing that erasing the customer would not shred. Who placed it (`ownerId`) stays private.
 */
export function toIntegrationEvent(
  event: RecordedEvent,
): Omit<IntegrationEvent, "id" | "headers"> | undefined {
  const domainEvent = { type: event.type, data: event.data } as OrderEvent;
  if (!domainEvent.data?.order) return undefined;
  const { order, customerId, personal } = domainEvent.data;
  const base = { order, customerId, ...(personal !== undefined ? { personal } : {}) };
  switch (domainEvent.type) {
    case "OrderPlaced":
      return { subject: orderingEvents.orderPlaced.subject, payload: base };
    case "OrderApproved":
      return { subject: orderingEvents.orderApproved.subject, payload: base };
    case "OrderShipped": {
      const { carrier, trackingNumber, estimatedDelivery } = domainEvent.data;
      return {
        subject: orderingEvents.orderShipped.subject,
        payload: { ...base, carrier, trackingNumber, estimatedDelivery },
      };
    }
    case "OrderDelivered":
      return { subject: orderingEvents.orderDelivered.subject, payload: base };
    case "OrderCancelled":
      return {
        subject: orderingEvents.orderCancelled.subject,
        payload: { ...base, reason: domainEvent.data.reason },
      };
    default:
      return undefined;
  }
}
