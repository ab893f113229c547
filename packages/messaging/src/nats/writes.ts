/**
 * One socket write per turn of the event loop for what the connection has to send.
 */
import type { NatsConnection } from "nats";

/** The part of nats.js's protocol handler that `coalesceWrites` changes (not in its public types). */
interface ProtocolWrites {
  flushPending(): void;
  outbound: { size(): number };
  pendingLimit: number;
}

/**
 * Sends what the connection has to send once per turn of the event loop instead of once per
 * callback: nats.js flushes its outbound buffer in a microtask after each publish, so every
 * HTTP request the gateway takes (and every reply a service sends), each handled in its own
 * callback, cost a socket write of its own, and nats-server a read and a wake-up. Deferred to
 * `setImmediate`, the requests and replies of one turn leave in one write, right after the
 * turn's I/O callbacks. A buffer past the client's own limit (32 KiB) is still written at once.
 * Throws when nats.js no longer has this shape, so an upgrade that changes it fails the tests.
 */
export function coalesceWrites(nc: NatsConnection): void {
  const protocol = (nc as NatsConnection & { protocol?: Partial<ProtocolWrites> }).protocol;
  if (
    typeof protocol?.flushPending !== "function" ||
    typeof protocol.outbound?.size !== "function" ||
    typeof protocol.pendingLimit !== "number"
  ) {
    throw new Error("nats.js's protocol handler changed: coalesceWrites cannot defer its flushes");
  }
  const handler = protocol as ProtocolWrites;
  const flushNow = handler.flushPending.bind(handler);
  let scheduled = false;
  handler.flushPending = () => {
    if (handler.outbound.size() >= handler.pendingLimit) return flushNow();
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flushNow();
    });
  };
}
