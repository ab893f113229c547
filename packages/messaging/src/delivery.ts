/** Event rules shared by both adapters so they behave alike. */
/**
 * How long a delivered event may go unacked before it is delivered again. It bounds the stall of
 * a durable (one event in flight at a time) when nats-server dies after handing an event out: the
 * restarted server holds it as pending until this runs out. Handlers take milliseconds (a write
 * to the event store); one that runs longer is redelivered, so handlers are idempotent anyway.
 */
export const DEFAULT_ACK_WAIT_MS = 10_000;
export const DEFAULT_MAX_DELIVER = 10;

/** Backoff before redelivering a rejected event: 500 ms, 1 s, 2 s... capped at 30 s. */
export function redeliveryDelayMs(deliveryCount: number): number {
  return Math.min(500 * 2 ** Math.max(0, deliveryCount - 1), 30_000);
}

/** The EVENTS stream stores `events.>` only; publishing elsewhere would be lost, so it fails. */
export function noStreamFor(subject: string): Error {
  return new Error(`no stream stores ${subject}; integration events go under events.>`);
}
