import {
  contextMetadata,
  handleCommand,
  isoNow,
  type RequestContext,
  unavailable,
} from "@cheese/service-kit";
import { orderDecider, orderStream } from "../domain/order.ts";
import { ORDERS, type OrderDocument } from "../projections/orders.ts";
import type { OrderingDeps } from "./deps.ts";

/**
 * On cheese.deleted: the cheese's placed orders are cancelled (docs/ordering.md). Repeating it
 * (a redelivered event) changes nothing, since cancelled orders stay as they are.
 */
export async function cancelOrdersOfDeletedCheese(
  deps: OrderingDeps,
  cheeseId: number,
  context: RequestContext,
  eventId: string,
): Promise<number> {
  if (!(await deps.projection.catchUp())) throw unavailable("orders are still being indexed");
  const placed = await deps.readModels
    .collection<OrderDocument>(ORDERS)
    .find({ status: "placed", cheeseIds: cheeseId });
  for (const { _id } of placed) {
    await handleCommand(
      deps.store,
      orderStream(_id),
      orderDecider,
      { type: "CancelForDeletedCheese", cheeseId, at: isoNow(deps.clock) },
      { metadata: contextMetadata(context, eventId) },
    );
  }
  return placed.length;
}
