import type { HistoryChange, OrderHistoryEntry } from "@cheese/contracts";
import type { OrderEvent } from "./order.ts";

/**
 * What an order's history shows of each of its events. Never the shipping address or the notes:
 * they may be personal data, and the order itself shows the current ones to those allowed.
 */
export function orderHistoryEntry(event: OrderEvent): HistoryChange<OrderHistoryEntry> {
  const { status } = event.data.order;
  switch (event.type) {
    case "OrderPlaced": {
      const { items, total } = event.data.order;
      return { type: "order.placed", data: { status, items, total } };
    }
    case "OrderApproved":
      return { type: "order.approved", data: { status } };
    case "OrderShipped": {
      const { carrier, trackingNumber, estimatedDelivery } = event.data;
      return { type: "order.shipped", data: { status, carrier, trackingNumber, estimatedDelivery } };
    }
    case "OrderDelivered":
      return { type: "order.delivered", data: { status } };
    case "OrderCancelled":
      return { type: "order.cancelled", data: { status, reason: event.data.reason } };
  }
}
