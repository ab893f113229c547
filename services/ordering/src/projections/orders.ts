import type { Order, OrderStatus } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { Document, ReadModelStore } from "@cheese/read-models";
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
}

export const ORDERS = "orders";

export async function projectOrder(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const { order, customerId } = (event as unknown as OrderEvent).data;
  await readModels.collection<OrderDocument>(ORDERS).upsert(order.id, event.revision, {
    $set: {
      order,
      status: order.status,
      customerId,
      createdAt: order.createdAt,
      cheeseIds: order.items.map((item) => item.cheeseId),
    },
  });
}
