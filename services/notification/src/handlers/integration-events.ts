import { type Closable, consumeEvents, type MessageBus } from "@cheese/messaging";
import { contextFromHeaders, contextMetadata, inSpan, type Logger, SpanKind } from "@cheese/service-kit";
import { eventIdFor, mappedEvents, toWebhookEvent } from "../domain/event-mapping.ts";
import type { NotificationDeps } from "./deps.ts";
import { fanOut } from "./fan-out.ts";

export const WEBHOOK_CONSUMER = "notification-webhooks";

/**
 * Turns every service's integration events into webhook events, through one durable consumer
 * shared by the replicas (each event handled by one of them, in publish order). Handling is
 * idempotent by event id, so a redelivery after a crash creates nothing twice.
 */
export function consumeIntegrationEvents(bus: MessageBus, deps: NotificationDeps, logger: Logger): Closable {
  return consumeEvents(bus, {
    durable: WEBHOOK_CONSUMER,
    events: mappedEvents,
    // Failures here are the event store being unavailable; keep retrying (backoff up to 30 s) for hours.
    maxDeliver: 500,
    handler: async (event) => {
      const outgoing = toWebhookEvent(event);
      if (!outgoing) return;
      const received = contextFromHeaders(event.headers);
      // The event's trace goes on into the deliveries' metadata, and from there to each attempt.
      const recorded = await inSpan(
        "notification",
        `process ${event.subject}`,
        SpanKind.CONSUMER,
        received.trace,
        (trace) => {
          const context = { ...received, trace };
          return fanOut(
            deps,
            { eventId: eventIdFor(event.id), kind: outgoing.kind, data: outgoing.data },
            { ...contextMetadata(context, event.id) },
          );
        },
      );
      if (recorded) {
        logger.info(
          {
            requestId: received.requestId,
            eventId: recorded.eventId,
            kind: recorded.type,
            deliveries: recorded.deliveries.length,
          },
          "webhook event fanned out",
        );
      }
    },
    onInvalid: (event, error) =>
      logger.error(
        { subject: event.subject, eventId: event.id, err: error },
        "integration event does not match its contract; skipped",
      ),
  });
}
