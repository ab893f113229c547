import type { EventStore, RecordedEvent, Subscription } from "@cheese/event-store";
import type { IntegrationEvent, MessageBus } from "@cheese/messaging";
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

/**
 * The outbox relay: follows the service's own event store and publishes integration events.
 * The event-store event id is the message id, so a replay after a crash, or two replicas
 * relaying the same event, store it once (JetStream deduplication). The checkpoint lives in the
 * bus's key-value store, shared by replicas.
 */
export async function startPublisher(options: PublisherOptions): Promise<{ close(): Promise<void> }> {
  const { service, eventStore, bus, categories, toIntegrationEvent, logger } = options;
  const kv = await bus.kv(CHECKPOINT_BUCKET);
  const stored = await kv.get(service);
  let checkpoint = stored ? Number(new TextDecoder().decode(stored.value)) : -1;
  let saved = checkpoint;
  let subscription: Subscription | undefined;
  let closed = false;

  const save = async () => {
    if (checkpoint > saved) {
      saved = checkpoint;
      await kv.put(service, new TextEncoder().encode(String(checkpoint)));
    }
  };
  const timer = setInterval(() => void save().catch(() => {}), 1000);
  timer.unref();

  const subscribe = () => {
    subscription = eventStore.subscribe({
      categories,
      after: checkpoint === -1 ? undefined : checkpoint,
      handler: async (event) => {
        const integration = await toIntegrationEvent(event);
        if (integration) {
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
          try {
            await bus.publish({ ...integration, id: event.id, headers });
          } catch (error) {
            if (span) endSpan(span, error);
            throw error;
          }
          span?.end();
        }
        checkpoint = event.position;
      },
      onError: (error) => {
        logger.error({ err: error }, "event publisher stopped; restarting in 1s");
        if (!closed) setTimeout(() => !closed && subscribe(), 1000).unref();
      },
    });
  };
  subscribe();

  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await subscription?.close();
      await save().catch(() => {});
    },
  };
}
