import { orderingEvents } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";
import type { OrderEvent } from "./domain/order.ts";

/**
 * Every order transition becomes the integration event of the same name, with the order as it
 * now stands and its customer (docs/webhooks.md "Event kinds": order.placed / confirmed / shipped /
 * delivered / cancelled). Who placed it (`ownerId`) stays private.
 */
export function toIntegrationEvent(
  event: RecordedEvent,
): Omit<IntegrationEvent, "id" | "headers"> | undefined {
  const domainEvent = { type: event.type, data: event.data } as OrderEvent;
  switch (domainEvent.type) {
    case "OrderPlaced": {
      const { order, customerId } = domainEvent.data;
      return { subject: orderingEvents.orderPlaced.subject, payload: { order, customerId } };
    }
    case "OrderApproved":
      return { subject: orderingEvents.orderApproved.subject, payload: domainEvent.data };
    case "OrderShipped":
      return { subject: orderingEvents.orderShipped.subject, payload: domainEvent.data };
    case "OrderDelivered":
      return { subject: orderingEvents.orderDelivered.subject, payload: domainEvent.data };
    case "OrderCancelled":
      return { subject: orderingEvents.orderCancelled.subject, payload: domainEvent.data };
    default:
      return undefined;
  }
}
