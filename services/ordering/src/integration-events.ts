import { orderingEvents } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";
import type { OrderEvent } from "./domain/order.ts";
import { type CustomerVault, revealOrder } from "./handlers/personal-data.ts";

/**
 * Every order transition becomes the integration event of the same name, with the order as it
 * now stands (a customer's address and notes opened for the receivers who ship it; redacted once
 * the customer is erased) and its customer (docs/webhooks.md "Event kinds": order.placed /
 * confirmed / shipped / delivered / cancelled). Who placed it (`ownerId`) stays private.
 */
export async function toIntegrationEvent(
  event: RecordedEvent,
  vault: CustomerVault,
): Promise<Omit<IntegrationEvent, "id" | "headers"> | undefined> {
  const domainEvent = { type: event.type, data: event.data } as OrderEvent;
  const context = {
    requestId: String(event.metadata.requestId ?? event.id),
    correlationId: String(event.metadata.correlationId ?? event.id),
  };
  if (!domainEvent.data?.order) return undefined;
  const { customerId } = domainEvent.data;
  const order = await revealOrder(vault, domainEvent.data, context);
  switch (domainEvent.type) {
    case "OrderPlaced":
      return { subject: orderingEvents.orderPlaced.subject, payload: { order, customerId } };
    case "OrderApproved":
      return { subject: orderingEvents.orderApproved.subject, payload: { order, customerId } };
    case "OrderShipped": {
      const { carrier, trackingNumber, estimatedDelivery } = domainEvent.data;
      return {
        subject: orderingEvents.orderShipped.subject,
        payload: { order, customerId, carrier, trackingNumber, estimatedDelivery },
      };
    }
    case "OrderDelivered":
      return { subject: orderingEvents.orderDelivered.subject, payload: { order, customerId } };
    case "OrderCancelled":
      return {
        subject: orderingEvents.orderCancelled.subject,
        payload: { order, customerId, reason: domainEvent.data.reason },
      };
    default:
      return undefined;
  }
}
