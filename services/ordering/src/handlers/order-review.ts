import { randomUUID } from "node:crypto";
import type { Order } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import { handleCommand, isoNow } from "@cheese/service-kit";
import { orderDecider, orderStream, unorderable } from "../domain/order.ts";
import type { OrderingDeps } from "./deps.ts";

/**
 * How long after an order's review is due a replica that did not place it reviews it: the one
 * that placed it reviews it at its due time, and the others' timers are dropped when they see
 * the outcome. Only an order whose placing replica stopped before its review is reviewed by
 * another, this much later.
 */
export const REVIEW_TAKEOVER_MS = 10_000;

/** What a review needs of an order's placement: its cheeses, and the event its outcome follows. */
export interface Placement {
  cheeseIds: number[];
  /** The placement event's id: the outcome's `causationId`. */
  eventId: string;
  /** The placement's correlation id, which the outcome carries on. */
  correlationId: string | undefined;
}

/** The placement as its event recorded it (`order`: the order its data carries). */
export function placementOf(event: RecordedEvent, order: Order): Placement {
  const { correlationId } = event.metadata;
  return {
    cheeseIds: order.items.map((item) => item.cheeseId),
    eventId: event.id,
    correlationId: typeof correlationId === "string" ? correlationId : undefined,
  };
}

/**
 * The process manager's step: re-check a placed order's cheeses and approve it (all still
 * available) or cancel it. An order no longer placed is left alone, so replicas racing on one
 * order, or a review repeated after a crash, append one outcome (expected-revision appends).
 * An unreachable catalogue throws, and the caller tries again later.
 *
 * `placement` is what the orders projection saw placed (an order's cheeses never change); for
 * an order found placed at start it is read from the order's first event. The outcome is decided
 * on the state this process remembers from placing the order, unread; the store refuses that
 * append should the stream have moved since, and the command is then decided on it as it is
 * (nothing, once the order is no longer placed).
 */
export async function reviewOrder(
  deps: Pick<OrderingDeps, "store" | "clock" | "catalogue">,
  orderId: number,
  placement?: Placement,
): Promise<void> {
  const { cheeseIds, eventId, correlationId } = placement ?? (await readPlacement(deps, orderId));
  const requestId = randomUUID();
  const context = { requestId, correlationId: correlationId ?? requestId };
  const problems: string[] = [];
  for (const cheeseId of cheeseIds) {
    const problem = unorderable(cheeseId, await deps.catalogue.findCheese(cheeseId, context));
    if (problem) problems.push(problem);
  }
  const verdict =
    problems.length === 0
      ? { approve: true as const }
      : { approve: false as const, reason: problems.join("; ") };
  await handleCommand(
    deps.store,
    orderStream(orderId),
    orderDecider,
    { type: "ReviewOrder", verdict, at: isoNow(deps.clock) },
    { metadata: { ...context, causationId: eventId }, rememberedIsCurrent: true },
  );
}

/** The placement of an order, from its stream's first event. */
async function readPlacement(deps: Pick<OrderingDeps, "store">, orderId: number): Promise<Placement> {
  const [placed] = await deps.store.readStream(orderStream(orderId), { maxCount: 1 });
  if (!placed) throw new Error(`order ${orderId} has no events`);
  return placementOf(placed, (placed.data as { order: Order }).order);
}
