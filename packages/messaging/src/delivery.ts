/** Event rules shared by both adapters so they behave alike. */
/**
 * Publishing an event id again within this window stores it once: 2 min, JetStream's own default.
 * What publishes an event again is the outbox relay, from a checkpoint saved every second, after
 * a crash, a lost publish acknowledgement or a standby's take-over of the lease (`RELAY_LEASE`, 5 s):
 * seconds after the first publish. Past the window a republished event is stored twice, and every
 * consumer handles it once anyway (by event id, order id or credential version). Each server keeps
 * the id of every event published within the window, and reads them back from disk on a restart.
 */
export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;

/**
 * How long a delivered event may go unacked before it is delivered again. It bounds the stall of
 * a durable (one event in flight at a time) when nats-server dies after handing an event out, or
 * the process handling it dies: the event is then pending until this runs out. A handler still
 * running is never abandoned: its consumer tells the server it is working every half ack wait.
 */
export const DEFAULT_ACK_WAIT_MS = 10_000;

/** The longest wait between two deliveries of an event its handler keeps rejecting. */
export const DEFAULT_MAX_REDELIVERY_DELAY_MS = 5 * 60_000;

/**
 * How long an event whose handler keeps rejecting it is retried, from its first rejection, before
 * it moves to the dead letters (`DEAD_LETTER_AFTER`).
 */
export const DEFAULT_DEAD_LETTER_AFTER_MS = 24 * 3_600_000;

/** Backoff before redelivering a rejected event: 500 ms, 1 s, 2 s... capped at `maxMs` (5 min). */
export function redeliveryDelayMs(
  deliveryCount: number,
  maxMs: number = DEFAULT_MAX_REDELIVERY_DELAY_MS,
): number {
  return Math.min(500 * 2 ** Math.min(30, Math.max(0, deliveryCount - 1)), maxMs);
}

/** How often a consumer tells the bus a handler is still working on its event. */
export function workingIntervalMs(ackWaitMs: number): number {
  return Math.max(50, Math.floor(ackWaitMs / 2));
}

/** The text a dead letter keeps of the failure that put it there (bounded). */
export function failureText(error: unknown): string {
  const text =
    error instanceof Error ? `${error.name}: ${error.message}` : typeof error === "string" ? error : "failed";
  return text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text;
}

/** The EVENTS stream stores `events.>` only; publishing elsewhere would be lost, so it fails. */
export function noStreamFor(subject: string): Error {
  return new Error(`no stream stores ${subject}; integration events go under events.>`);
}
