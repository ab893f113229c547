import type { Order, OrderActor } from "@cheese/contracts";
import { contextMetadata, type HandlerContext, handleCommand, isoNow } from "@cheese/service-kit";
import { type OrderCommand, orderDecider, orderStream } from "../domain/order.ts";
import type { OrderingDeps } from "./deps.ts";
import { revealOrder } from "./other-services.ts";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Change = DistributiveOmit<
  Extract<OrderCommand, { type: "CancelOrder" | "ShipOrder" | "DeliverOrder" }>,
  "at"
>;

/** Cancels, ships or delivers an order on behalf of `by`, and answers the order as it now stands. */
export async function changeOrder(
  deps: OrderingDeps,
  orderId: number,
  change: Change,
  context: HandlerContext,
): Promise<Order> {
  const command = { ...change, at: isoNow(deps.clock) } as OrderCommand;
  const { state } = await handleCommand(deps.store, orderStream(orderId), orderDecider, command, {
    metadata: contextMetadata(context),
  });
  if (state.status === "absent") throw new Error("unreachable: the decider refuses absent orders");
  return revealOrder(deps.vault, state, context);
}

export const cancelOrder = (deps: OrderingDeps, orderId: number, by: OrderActor, context: HandlerContext) =>
  changeOrder(deps, orderId, { type: "CancelOrder", by }, context);
