import { randomUUID } from "node:crypto";
import { foldEvents, handleCommand, isoNow } from "@cheese/service-kit";
import { orderDecider, orderStream, unorderable } from "../domain/order.ts";
import type { OrderingDeps } from "./deps.ts";

/**
 * How long after an order's review is due a replica that did not place it reviews it: the one
 * that placed it reviews it at its due time, and the others' timers are dropped when they see
 * the outcome. Only an order whose placing replica stopped before its review is reviewed by
 * another, this much later.
 */
export const REVIEW_TAKEOVER_MS = 10_000;

/**
 * The process manager's step: re-check a placed order's cheeses and approve it (all still
 * available) or cancel it. An order no longer placed is left alone, so replicas racing on one
 * order, or a review repeated after a crash, append one outcome (expected-revision appends).
 * An unreachable catalogue throws, and the caller tries again later.
 */
export async function reviewOrder(
  deps: Pick<OrderingDeps, "store" | "clock" | "catalogue">,
  orderId: number,
): Promise<void> {
  // Read whole (the outcome's metadata names the placement). The outcome is then decided on the
  // state this process remembers from placing the order, unread again; the store refuses that
  // append should the stream have moved since, and the command is then decided on it as it is.
  const events = await deps.store.readStream(orderStream(orderId));
  const state = foldEvents(orderDecider, events);
  if (state.status !== "placed") return;
  const placed = events[0]!;
  const requestId = randomUUID();
  const context = { requestId, correlationId: String(placed.metadata.correlationId ?? requestId) };
  const problems: string[] = [];
  for (const item of state.order.items) {
    const problem = unorderable(item.cheeseId, await deps.catalogue.findCheese(item.cheeseId, context));
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
    { metadata: { ...context, causationId: placed.id }, rememberedIsCurrent: true },
  );
}
