import { orderingEvents, PLAN_CHANGED } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { type Closable, consumeEvents, type MessageBus } from "@cheese/messaging";
import { contextFromHeaders, contextMetadata, handleCommand, type Logger } from "@cheese/service-kit";
import { customerDecider, customerStream } from "../domain/customer.ts";

/**
 * Tiers: every delivered order adds its total to its customer's delivered total, once per order id
 * (the decider ignores an order it has counted, so redeliveries change nothing), and moves
 * customerStatus when a threshold is crossed, broadcasting the change to the gateways' plan caches.
 * Replicas share the durable, one delivery each.
 */
export function countDeliveredOrders(bus: MessageBus, store: EventStore, logger: Logger): Closable {
  return consumeEvents(bus, {
    durable: "customer-tiers",
    events: [orderingEvents.orderDelivered],
    handler: async (event) => {
      const { order, customerId } = event.payload;
      if (customerId === null) return;
      const { newEvents } = await handleCommand(
        store,
        customerStream(customerId),
        customerDecider,
        { type: "CountDeliveredOrder", orderId: order.id, total: order.total },
        { metadata: contextMetadata(contextFromHeaders(event.headers), event.id) },
      );
      // Every gateway drops what it cached of the customer's plan at once (not when it runs out).
      if (newEvents.some((e) => e.type === "CustomerStatusChanged")) {
        await bus.broadcast(PLAN_CHANGED, { customerId });
      }
    },
    onInvalid: (event, error) =>
      logger.error({ err: error, subject: event.subject, eventId: event.id }, "invalid event dropped"),
  });
}
