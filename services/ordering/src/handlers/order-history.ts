import type { OrderActor, OrderHistoryEntry } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { type HistoryPage, notFound, readHistory } from "@cheese/service-kit";
import { type OrderEvent, orderStream } from "../domain/order.ts";
import { orderHistoryEntry } from "../domain/order-history.ts";

/**
 * GET /store/order/{orderId}/history: for the order's customer or an operator. Someone else's
 * order is 404, as the order itself is, so ids do not leak.
 */
export async function orderHistory(
  store: EventStore,
  request: { orderId: number; actor: OrderActor; cursor?: string | undefined; limit: number },
): Promise<HistoryPage<OrderHistoryEntry>> {
  const stream = orderStream(request.orderId);
  const [placed] = await store.readStream(stream, { maxCount: 1 });
  const owner = (placed?.data as { customerId?: number | null } | undefined)?.customerId;
  const { customerId } = request.actor;
  if (!placed || (customerId !== null && owner !== customerId)) {
    throw notFound("order not found");
  }
  return readHistory(store, stream, request, (event) => ({
    ...orderHistoryEntry({ type: event.type, data: event.data } as OrderEvent),
    at: event.createdAt,
  }));
}
