import type { Order, OrderStatus, OrderViewer } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import type { Filter, ReadModelStore } from "@cheese/read-models";
import { DomainError, foldEvents, type Projection } from "@cheese/service-kit";
import { orderDecider, orderStream, visibleTo } from "../domain/order.ts";
import { ORDERS, type OrderDocument } from "../projections/orders.ts";

export interface OrderReadSide {
  store: EventStore;
  readModels: ReadModelStore;
  projection: Projection;
}

/**
 * One order, folded from its stream rather than read from the projection, so a GET right after
 * the 201 finds it whichever replica answers. Someone else's order reads as absent.
 */
export async function getOrder(side: OrderReadSide, orderId: number, viewer: OrderViewer): Promise<Order> {
  const state = foldEvents(orderDecider, await side.store.readStream(orderStream(orderId)));
  if (state.status === "absent" || !visibleTo(viewer, state.customerId)) {
    throw new DomainError(404, "not_found", `order ${orderId} not found`);
  }
  return state.order;
}

export interface ListRequest {
  viewer: OrderViewer;
  limit: number;
  after?: { createdAt: string; id: number } | undefined;
  statuses?: OrderStatus[] | undefined;
}

/** The viewer's orders, newest first, keyset paginated on (createdAt, id) so pages never shift. */
export async function listOrders(side: OrderReadSide, request: ListRequest) {
  await caughtUp(side.projection);
  const filter: Filter = {};
  if (request.viewer.customerId !== null) filter.customerId = request.viewer.customerId;
  if (request.statuses?.length) filter.status = { $in: request.statuses };
  const orders = side.readModels.collection<OrderDocument>(ORDERS);
  const { after } = request;
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
  return {
    items: page.slice(0, request.limit).map((document) => document.order),
    hasMore: page.length > request.limit,
    total: await orders.count(filter),
  };
}

/** decisions.md: approved or shipped orders for a cheese make its deletion a 409. */
export async function activeOrdersForCheese(side: OrderReadSide, cheeseId: number): Promise<number> {
  await caughtUp(side.projection);
  return side.readModels
    .collection<OrderDocument>(ORDERS)
    .count({ status: { $in: ["approved", "shipped"] }, cheeseIds: cheeseId });
}

/** A stale answer here could let a cheese with active orders be deleted, so better a 503. */
async function caughtUp(projection: Projection): Promise<void> {
  if (!(await projection.catchUp())) {
    throw new DomainError(503, "service_unavailable", "orders are still being indexed; try again");
  }
}
