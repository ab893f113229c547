import type { EventStore, RecordedEvent, Subscription } from "@cheese/event-store";
import { type IntegrationEvent, jsonCodec, KvRecords, type MessageBus } from "@cheese/messaging";
import type { Logger } from "./logger.ts";
import { CORRELATION_ID_HEADER, REQUEST_ID_HEADER } from "./request-context.ts";
import { endSpan, extractTrace, injectTrace, SpanKind, startSpan, tracerFor } from "./tracing.ts";

export interface PublisherOptions {
  service: string;
  eventStore: EventStore;
  bus: MessageBus;
  categories: string[];
  /**
   * Maps a domain event to the integration event others may see; undefined keeps it private. It
   * may ask another service (ordering opens a customer's sealed address); a failure stops the
   * relay at that event, which is tried again a second later.
   */
  toIntegrationEvent: (
    event: RecordedEvent,
  ) =>
    | Omit<IntegrationEvent, "id" | "headers">
    | undefined
    | Promise<Omit<IntegrationEvent, "id" | "headers"> | undefined>;
  logger: Logger;
}

const CHECKPOINT_BUCKET = "publisher_checkpoints";
/** Publishes awaiting JetStream's ack at once; the relay reads on while they are under way. */
export const PUBLISH_WINDOW = 64;

/** The relays' checkpoints, a key per service: the last position relayed. */
export function checkpointRecords(bus: MessageBus): KvRecords<number> {
  return new KvRecords(
    bus,
    CHECKPOINT_BUCKET,
    jsonCodec((parsed) => (typeof parsed === "number" && Number.isFinite(parsed) ? parsed : undefined)),
  );
}

/**
 * Raises the relay's checkpoint under `key` to `position` by compare-and-set, never lowering it:
 * of two replicas relaying the same events, the one behind leaves the other's checkpoint as it is
 * (a plain put would move it back, and the next start would publish again what followed).
 */
export async function raiseCheckpoint(
  records: KvRecords<number>,
  key: string,
  position: number,
): Promise<void> {
  await records.update(key, (current) =>
    current?.value !== undefined && current.value >= position ? undefined : position,
  );
}

/** One run of the relay's subscription, from the checkpoint; a failed publish ends it. */
interface Run {
  /** The events handed to the relay, oldest first, until each one and all before it are acked. */
  queue: { position: number; done: boolean }[];
  inFlight: Set<Promise<void>>;
  failed: boolean;
  subscription?: Subscription;
}

/**
 * The outbox relay: follows the service's own event store and publishes integration events.
 * The event-store event id is the message id, so a replay after a crash, or two replicas
 * relaying the same event, store it once (JetStream deduplication). The checkpoint lives in the
 * bus's key-value store, shared by replicas, and only moves forward (`raiseCheckpoint`).
 *
 * Publishes go out in event-store order, up to {@link PUBLISH_WINDOW} awaiting their ack at once
 * (one at a time, the ack round trip bounded a service's events per second). The checkpoint
 * advances only over events whose publish and every earlier one's is acked. A failed publish
 * stops the run: the relay starts again a second later from the checkpoint, republishing what
 * followed it (stored once). Then, and only then, an event may be stored after some of the
 * (at most window − 1) events that followed it; consumers that care use `publishedAt`.
 */
export async function startPublisher(options: PublisherOptions): Promise<{ close(): Promise<void> }> {
  const { service, eventStore, bus, categories, toIntegrationEvent, logger } = options;
  const checkpoints = checkpointRecords(bus);
  let checkpoint = (await checkpoints.get(service))?.value ?? -1;
  let saved = checkpoint;
  let closed = false;
  const runs = new Set<Run>();

  const save = async () => {
    if (checkpoint > saved) {
      const position = checkpoint;
      await raiseCheckpoint(checkpoints, service, position);
      saved = Math.max(saved, position);
    }
  };
  const timer = setInterval(() => void save().catch(() => {}), 1000);
  timer.unref();

  const advance = (run: Run) => {
    while (run.queue[0]?.done) checkpoint = Math.max(checkpoint, run.queue.shift()!.position);
  };

  const restartLater = () => {
    if (!closed) setTimeout(() => !closed && subscribe(), 1000).unref();
  };

  const publish = (event: RecordedEvent, integration: Omit<IntegrationEvent, "id" | "headers">) => {
    const headers: Record<string, string> = {
      [REQUEST_ID_HEADER]: String(event.metadata.requestId ?? ""),
      [CORRELATION_ID_HEADER]: String(event.metadata.correlationId ?? ""),
    };
    // The command's trace goes on with the event (a producer span under it), when it has one.
    const traced = typeof event.metadata.traceparent === "string";
    const { span, context } = traced
      ? startSpan(
          tracerFor(service),
          `publish ${integration.subject}`,
          SpanKind.PRODUCER,
          extractTrace(event.metadata),
        )
      : { span: undefined, context: undefined };
    injectTrace(context, headers);
    // Called in event-store order and written to the connection at once, so stored in that order.
    return bus.publish({ ...integration, id: event.id, headers }).then(
      () => span?.end(),
      (error: unknown) => {
        if (span) endSpan(span, error);
        throw error;
      },
    );
  };

  const subscribe = () => {
    const run: Run = { queue: [], inFlight: new Set(), failed: false };
    runs.add(run);
    const fail = (error: unknown) => {
      if (run.failed) return;
      run.failed = true;
      logger.error({ err: error }, "event publisher stopped; restarting in 1s");
      // Stop reading, let the publishes under way settle, then start again from the checkpoint.
      void (async () => {
        await run.subscription?.close();
        await Promise.allSettled([...run.inFlight]);
        runs.delete(run);
        restartLater();
      })();
    };
    run.subscription = eventStore.subscribe({
      categories,
      after: checkpoint === -1 ? undefined : checkpoint,
      handler: async (event) => {
        if (run.failed) return; // the run is ending; the checkpoint stays before the failed event
        const entry = { position: event.position, done: false };
        const integration = await toIntegrationEvent(event);
        run.queue.push(entry);
        if (!integration) {
          entry.done = true;
          advance(run);
          return;
        }
        while (run.inFlight.size >= PUBLISH_WINDOW) await Promise.race(run.inFlight);
        const sent: Promise<void> = publish(event, integration).then(() => {
          entry.done = true;
          advance(run);
        }, fail);
        const tracked = sent.finally(() => run.inFlight.delete(tracked));
        run.inFlight.add(tracked);
      },
      onError: (error) => fail(error),
    });
  };
  subscribe();

  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await Promise.allSettled([...runs].map((run) => run.subscription?.close()));
      await Promise.allSettled([...runs].flatMap((run) => [...run.inFlight]));
      await save().catch(() => {});
    },
  };
}
