import type { Address, Order, OrderActor, OrderStatus } from "@cheese/contracts";
import type { Filter } from "@cheese/read-models";
import {
  decodeCursor,
  encodeCursor,
  foldEvents,
  foldStreamAsOf,
  notFound,
  type Projection,
  type RequestContext,
  unavailable,
} from "@cheese/service-kit";
import { z } from "zod";
import { orderDecider, orderStream, visibleTo } from "../domain/order.ts";
import { ORDERS, type OrderDocument } from "../projections/orders.ts";
import type { OrderingDeps } from "./deps.ts";
import { revealOrder, revealOrders } from "./other-services.ts";

/**
 * One order, folded from its stream rather than read from the projection, so a GET right after
 * the 201 finds it whichever replica answers. Someone else's order reads as absent.
 */
export async function getOrder(
  deps: OrderingDeps,
  orderId: number,
  actor: OrderActor,
  context: RequestContext,
): Promise<Order> {
  const state = foldEvents(orderDecider, await deps.store.readStream(orderStream(orderId)));
  if (state.status === "absent" || !visibleTo(actor, state.customerId)) {
    throw notFound(`order ${orderId} not found`);
  }
  return revealOrder(deps.vault, state, context);
}

/**
 * GET /store/order/{id}?asOf=: the order as it was at `asOf`, its stream folded with the decider's
 * own `evolve` up to the last event recorded then. Whoever may read the order now may read it
 * (its customer, which no event changes, or an operator); its address and notes are opened with
 * the customer's key today, so an erased customer's order answers redacted whatever the moment.
 */
export async function getOrderAsOf(
  deps: OrderingDeps,
  request: { orderId: number; actor: OrderActor; asOf: string },
  context: RequestContext,
): Promise<{ order: Order; at: string }> {
  const stream = orderStream(request.orderId);
  const { state, last } = await foldStreamAsOf(deps.store, stream, orderDecider, Date.parse(request.asOf));
  if (state.status === "absent" || !last || !visibleTo(request.actor, state.customerId)) {
    throw notFound(`order ${request.orderId} not found at ${request.asOf}`);
  }
  return { order: await revealOrder(deps.vault, state, context), at: last.createdAt };
}

/** Orders revealed per page of the export: the customer service opens at most 1,000 blobs a request. */
const EXPORT_PAGE = 500;

/**
 * A customer's data export, ordering's part: every order the customer placed, newest first, as
 * they read now, and the shipping addresses on them, each once (the first, newest, kept).
 */
export async function customerOrders(
  deps: OrderingDeps,
  customerId: number,
  context: RequestContext,
): Promise<{ orders: Order[]; addresses: Address[] }> {
  await caughtUp(deps.projection);
  const collection = deps.readModels.collection<OrderDocument>(ORDERS);
  const orders: Order[] = [];
  let after: { createdAt: string; id: number } | undefined;
  for (;;) {
    const filter: Filter = after
      ? {
          customerId,
          $or: [
            { createdAt: { $lt: after.createdAt } },
            { createdAt: after.createdAt, _id: { $lt: after.id } },
          ],
        }
      : { customerId };
    const page = await collection.find(filter, { sort: { createdAt: -1, _id: -1 }, limit: EXPORT_PAGE });
    orders.push(...(await revealOrders(deps.vault, page, context)));
    const last = page.at(-1);
    if (page.length < EXPORT_PAGE || !last) break;
    after = { createdAt: last.createdAt, id: last._id };
  }
  const seen = new Set<string>();
  const addresses: Address[] = [];
  for (const { shippingAddress } of orders) {
    const key = JSON.stringify(shippingAddress);
    if (seen.has(key)) continue;
    seen.add(key);
    addresses.push(shippingAddress);
  }
  return { orders, addresses };
}

export interface ListRequest {
  actor: OrderActor;
  limit: number;
  cursor?: string | undefined;
  statuses?: OrderStatus[] | undefined;
}

/** Where a page ends: the last order's (createdAt, id). */
const Position = z.strictObject({
  c: z.string().refine((value) => !Number.isNaN(Date.parse(value))),
  o: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
});

/** The actor's orders, newest first, keyset paginated on (createdAt, id) so pages never shift. */
export async function listOrders(deps: OrderingDeps, request: ListRequest, context: RequestContext) {
  await caughtUp(deps.projection);
  const filter: Filter = {};
  if (request.actor.customerId !== null) filter.customerId = request.actor.customerId;
  if (request.statuses?.length) filter.status = { $in: request.statuses };
  const orders = deps.readModels.collection<OrderDocument>(ORDERS);
  const position = request.cursor === undefined ? undefined : decodeCursor(request.cursor, Position);
  const after = position && { createdAt: position.c, id: position.o };
  const rest: Filter = after
    ? {
        ...filter,
        $or: [
          { createdAt: { $lt: after.createdAt } },
          { createdAt: after.createdAt, _id: { $lt: after.id } },
        ],
      }
    : filter;
  const page = await orders.find(rest, { sort: { createdAt: -1, _id: -1 }, limit: request.limit + 1 });
  const items = await revealOrders(deps.vault, page.slice(0, request.limit), context);
  const hasMore = page.length > request.limit;
  const last = items.at(-1);
  return {
    items,
    nextCursor: hasMore && last ? encodeCursor({ c: last.createdAt, o: last.id }) : null,
    hasMore,
    total: await orders.count(filter),
  };
}

/** Approved or shipped orders for a cheese make its deletion a 409 (docs/catalogue.md). */
export async function activeOrdersForCheese(deps: OrderingDeps, cheeseId: number): Promise<number> {
  await caughtUp(deps.projection);
  return deps.readModels
    .collection<OrderDocument>(ORDERS)
    .count({ status: { $in: ["approved", "shipped"] }, cheeseIds: cheeseId });
}

/** A stale answer here could let a cheese with active orders be deleted, so better a 503. */
async function caughtUp(projection: Projection): Promise<void> {
  if (!(await projection.catchUp())) {
    throw unavailable("orders are still being indexed; try again");
  }
}
