import type { Order, OrderStatus } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { CollectionDefinition, Document, ReadModelStore } from "@cheese/read-models";
import type { OrderEvent } from "../domain/order.ts";

/** The `orders` read model: one document per order, `_id` = order id. */
export interface OrderDocument extends Document {
  _id: number;
  order: Order;
  status: OrderStatus;
  customerId: number | null;
  /** For listing newest first (ids of two replicas' blocks are not in time order). */
  createdAt: string;
  /** The cheeses on the order, for "orders of this cheese" queries. */
  cheeseIds: number[];
  /** A customer's address and notes, sealed (`order` carries them redacted); see `redacted` in domain/order.ts. */
  personal?: string;
}

export const ORDERS = "orders";

/** Raise when projectOrder writes something else: the read model is rebuilt (architecture.md). */
export const ORDERS_VERSION = 1;

const keyset = { $or: [{ createdAt: { $lt: "2025" } }, { createdAt: "2025", _id: { $lt: 9 } }] };

/** The `orders` collection's indexes and every query run on it. */
export const ordersCollection: CollectionDefinition = {
  name: ORDERS,
  indexes: [
    { keys: { customerId: 1, createdAt: -1, _id: -1 } },
    { keys: { createdAt: -1, _id: -1 } },
    { keys: { status: 1, cheeseIds: 1, _id: 1 } },
  ],
  queries: [
    {
      name: "GET /orders of a customer, newest first (handlers/order-queries.ts)",
      filter: { customerId: 7, status: { $in: ["placed"] }, ...keyset },
      optional: ["status", "createdAt", "_id"],
      sort: { createdAt: -1, _id: -1 },
    },
    {
      name: "GET /orders for staff, every customer's, newest first",
      filter: { status: { $in: ["placed"] }, ...keyset },
      optional: ["status", "createdAt", "_id"],
      sort: { createdAt: -1, _id: -1 },
    },
    {
      name: "GET /orders total of a customer's",
      filter: { customerId: 7, status: { $in: ["placed"] } },
      optional: ["status"],
    },
    {
      name: "GET /orders total for staff",
      filter: { status: { $in: ["placed"] } },
      optional: ["status"],
      scans: "staff's unfiltered total counts every order",
    },
    {
      name: "active orders of a cheese, before it is deleted",
      filter: { status: { $in: ["approved", "shipped"] }, cheeseIds: 4 },
    },
    {
      name: "placed orders of a deleted cheese, a page at a time (handlers/cheese-deleted.ts)",
      filter: { status: "placed", cheeseIds: 4, _id: { $gt: 9 } },
      sort: { _id: 1 },
    },
    { name: "placed orders to review, at start (main.ts)", filter: { status: "placed" } },
  ],
};

export async function projectOrder(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const { order, customerId, personal } = (event as unknown as OrderEvent).data;
  await readModels.collection<OrderDocument>(ORDERS).upsert(order.id, event.revision, {
    $set: {
      order,
      status: order.status,
      customerId,
      createdAt: order.createdAt,
      cheeseIds: order.items.map((item) => item.cheeseId),
      ...(personal !== undefined ? { personal } : {}),
    },
  });
}
