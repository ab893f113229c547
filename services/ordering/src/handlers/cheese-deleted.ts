import type { EventStore } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import {
  contextMetadata,
  DomainError,
  handleCommand,
  type Projection,
  type RequestContext,
} from "@cheese/service-kit";
import { orderDecider, orderStream } from "../domain/order.ts";
import { ORDERS, type OrderDocument } from "../projections/orders.ts";

/**
 * decisions.md "Cheeses": deleting a cheese cancels its placed orders. Repeating it (a
 * redelivered event) changes nothing, since cancelled orders stay as they are.
 */
export async function cancelOrdersOfDeletedCheese(
  side: { store: EventStore; readModels: ReadModelStore; projection: Projection },
  cheeseId: number,
  context: RequestContext,
  eventId: string,
): Promise<number> {
  if (!(await side.projection.catchUp())) {
    throw new DomainError(503, "service_unavailable", "orders are still being indexed");
  }
  const placed = await side.readModels
    .collection<OrderDocument>(ORDERS)
    .find({ status: "placed", cheeseIds: cheeseId });
  for (const { _id } of placed) {
    await handleCommand(
      side.store,
      orderStream(_id),
      orderDecider,
      { type: "CancelForDeletedCheese", cheeseId, at: new Date().toISOString() },
      { metadata: contextMetadata(context, eventId) },
    );
  }
  return placed.length;
}
