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

/** Placed orders read, and cancelled, per page: a cheese in thousands of orders is no unbounded read. */
export const CANCEL_PAGE_SIZE = 100;

/**
 * On cheese.deleted: the cheese's placed orders are cancelled (docs/ordering.md), a page at a
 * time in order-id order, each page read after the last id done (keyset, so orders leaving the
 * "placed" set as they are cancelled shift nothing and none is skipped). Each cancellation is
 * its own command, idempotent per order: a cancelled order stays as it is. A failure part-way
 * rejects the event, which is redelivered; that delivery resumes where this one stopped, as the
 * orders already cancelled are no longer placed once the read model has caught up (and would
 * change nothing anyway). Returns how many orders this delivery cancelled.
 */
export async function cancelOrdersOfDeletedCheese(
  deps: OrderingDeps,
  cheeseId: number,
  context: RequestContext,
  eventId: string,
  pageSize = CANCEL_PAGE_SIZE,
): Promise<number> {
  if (!(await deps.projection.catchUp())) throw unavailable("orders are still being indexed");
  const orders = deps.readModels.collection<OrderDocument>(ORDERS);
  let cancelled = 0;
  let after = 0;
  while (true) {
    const page = await orders.findReadOnly(
      { status: "placed", cheeseIds: cheeseId, _id: { $gt: after } },
      { sort: { _id: 1 }, limit: pageSize },
    );
    for (const { _id } of page) {
      const appended = await handleCommand(
        deps.store,
        orderStream(_id),
        orderDecider,
        { type: "CancelForDeletedCheese", cheeseId, at: isoNow(deps.clock) },
        { metadata: contextMetadata(context, eventId) },
      );
      if (appended.newEvents.length > 0) cancelled++;
    }
    if (page.length < pageSize) return cancelled;
    after = page.at(-1)!._id;
  }
}
