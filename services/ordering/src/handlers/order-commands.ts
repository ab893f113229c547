import type { Order, OrderViewer } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { contextMetadata, type HandlerContext, handleCommand } from "@cheese/service-kit";
import { type OrderCommand, orderDecider, orderStream } from "../domain/order.ts";

type Change = DistributiveOmit<Exclude<OrderCommand, { type: "PlaceOrder" | "ReviewOrder" }>, "at">;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Applies one fulfilment or cancellation command and returns the order as it now stands. */
export async function changeOrder(
  store: EventStore,
  orderId: number,
  change: Change,
  context: HandlerContext,
): Promise<Order> {
  const command = { ...change, at: new Date().toISOString() } as OrderCommand;
  const result = await handleCommand(store, orderStream(orderId), orderDecider, command, {
    metadata: contextMetadata(context),
  });
  if (result.state.status === "absent") throw new Error("unreachable: the decider refuses absent orders");
  return result.state.order;
}

export const cancelOrder = (
  store: EventStore,
  orderId: number,
  viewer: OrderViewer,
  context: HandlerContext,
) => changeOrder(store, orderId, { type: "CancelOrder", by: viewer }, context);
