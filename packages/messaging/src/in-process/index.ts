/**
 * The in-process bus: the single-process fallback (no nats-server) and a fast test double.
 * Observable behaviour matches the NATS adapter: JSON copies of payloads, reply envelopes,
 * queue groups served round robin, dedup by event id, durable consumers with at-least-once
 * delivery in publish order (`maxInFlight` events in flight per durable, one by default), rejected
 * events retried with a capped backoff and dead-lettered after `deadLetterAfterMs`, KV with
 * revisions and CAS, and notice channels with sequences and barriers. A handler runs in this
 * process, so it is never abandoned while it runs (as the NATS adapter keeps extending a running
 * handler's ack wait).
 *
 * Everything lives in memory. In single-process mode durability comes from the event store:
 * publishers republish from their checkpoint at start (dedup makes that harmless) and
 * consumers are idempotent by event id.
 */
import type { MessageBus } from "../port.ts";
import { Broker, type InProcessBrokerOptions } from "./broker.ts";
import { InProcessBus } from "./bus.ts";

export type { InProcessBrokerOptions } from "./broker.ts";

/** The shared backend; every `connect()` is a client, as every process has its own NATS connection. */
export interface InProcessBroker {
  connect(name?: string): MessageBus;
}

export function createInProcessBroker(options: InProcessBrokerOptions = {}): InProcessBroker {
  const broker = new Broker(options);
  return { connect: () => new InProcessBus(broker) };
}

/** A broker with a single client, for code that only needs one bus. */
export function createInProcessBus(options: InProcessBrokerOptions = {}): MessageBus {
  return createInProcessBroker(options).connect();
}
