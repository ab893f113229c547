import { randomUUID } from "node:crypto";
import { type Clock, foldEvents, handleCommand, isoNow, type Logger, type Timer } from "@cheese/service-kit";
import { orderDecider, orderStream } from "../domain/order.ts";
import { unorderable } from "../domain/pricing.ts";
import type { OrderingDeps } from "./deps.ts";

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
    { metadata: { ...context, causationId: placed.id } },
  );
}

export interface ReviewScheduler {
  /** Reviews the order `delayMs` after it was placed (at once when that time has passed). */
  schedule(orderId: number, placedAt: string): void;
  /** The order is no longer placed: drop its timer. */
  forget(orderId: number): void;
  close(): Promise<void>;
}

const MAX_RETRY_MS = 30_000;
const CONCURRENT_REVIEWS = 8;

/**
 * Timers for the reviews this replica knows are due. The schedule lives in the event store
 * (placed orders and when they were placed), so a restarted replica rebuilds it from there; one
 * timer per order, reviews limited to a few at a time, failures retried with backoff.
 */
export function createReviewScheduler(options: {
  delayMs: number;
  review: (orderId: number) => Promise<void>;
  clock: Clock;
  logger: Logger;
}): ReviewScheduler {
  const { delayMs, review, clock, logger } = options;
  const timers = new Map<number, Timer>();
  const queue: { orderId: number; attempt: number }[] = [];
  const running = new Set<Promise<void>>();
  let closed = false;

  const later = (orderId: number, waitMs: number, attempt: number) => {
    timers.get(orderId)?.cancel();
    const timer = clock.setTimeout(() => {
      queue.push({ orderId, attempt });
      pump();
    }, waitMs);
    timers.set(orderId, timer);
  };

  const pump = () => {
    while (!closed && running.size < CONCURRENT_REVIEWS && queue.length > 0) {
      const { orderId, attempt } = queue.shift()!;
      if (!timers.has(orderId)) continue; // forgotten while queued
      const work = review(orderId).then(
        () => {
          timers.delete(orderId);
        },
        (error: unknown) => {
          const retryMs = Math.min(1000 * 2 ** attempt, MAX_RETRY_MS);
          logger.warn({ err: error, orderId, retryMs }, "order review failed; retrying");
          if (!closed && timers.has(orderId)) later(orderId, retryMs, attempt + 1);
        },
      );
      const tracked = work.finally(() => {
        running.delete(tracked);
        pump();
      });
      running.add(tracked);
    }
  };

  return {
    schedule(orderId, placedAt) {
      if (closed || timers.has(orderId)) return;
      later(orderId, Date.parse(placedAt) + delayMs - clock.now().getTime(), 0);
    },
    forget(orderId) {
      timers.get(orderId)?.cancel();
      timers.delete(orderId);
    },
    async close() {
      closed = true;
      for (const timer of timers.values()) timer.cancel();
      timers.clear();
      await Promise.allSettled([...running]);
    },
  };
}
