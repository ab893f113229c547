import { type Closable, consumeEvents, type DeliveredEvent, type MessageBus } from "@cheese/messaging";
import {
  contextFromHeaders,
  contextMetadata,
  endSpan,
  extractTrace,
  inSpan,
  type Logger,
  SpanKind,
  STREAM_REVISION_HEADER,
  startSpan,
  tracerFor,
} from "@cheese/service-kit";
import { eventIdFor, kindsBySubject, mappedEvents, toWebhookEvent } from "../domain/event-mapping.ts";
import type { NotificationDeps } from "./deps.ts";
import { fanOut, hasSubscriber } from "./fan-out.ts";

export const WEBHOOK_CONSUMER = "notification-webhooks";
/**
 * Events of the durable in flight at once, across the replicas. One at a time, each event's
 * fan-out (two event-store commits, an ack round trip) bounded the whole pipeline to ~60 events/s;
 * concurrent fan-outs also share their commits.
 */
export const WEBHOOK_CONSUMER_IN_FLIGHT = 64;

/**
 * Whether an event's subscribers are asked for before it is handled (its first delivery): the
 * registrations are then caught up once for it, there, and not again in its fan-out.
 */
const subscribersAsked = (event: DeliveredEvent) => event.deliveryCount === 1;

/**
 * Turns every service's integration events into webhook events, through one durable consumer
 * shared by the replicas (each event handled by one of them). Up to
 * {@link WEBHOOK_CONSUMER_IN_FLIGHT} events are handled at once, so they may be recorded out of
 * publish order; each webhook event's `created_at` is its integration event's publish time, so
 * sorting by it restores publish order. Handling is idempotent by event id, so a redelivery
 * after a crash creates nothing twice.
 */
export function consumeIntegrationEvents(bus: MessageBus, deps: NotificationDeps, logger: Logger): Closable {
  return consumeEvents(bus, {
    durable: WEBHOOK_CONSUMER,
    events: mappedEvents,
    maxInFlight: WEBHOOK_CONSUMER_IN_FLIGHT,
    // An event first delivered when no registration subscribes to any kind it may become costs
    // nothing more: no parsing, no event-store read or append (a redelivered one may have a
    // record from its earlier handling, whose deliveries must be completed: it goes on).
    wanted: async (event) => {
      if (!subscribersAsked(event)) return true;
      if (await hasSubscriber(deps, kindsBySubject.get(event.subject) ?? [])) return true;
      // The event's trace still shows that it reached this service, and went no further.
      const { span } = startSpan(
        tracerFor("notification"),
        `process ${event.subject}`,
        SpanKind.CONSUMER,
        extractTrace(event.headers),
      );
      if (span.isRecording()) span.setAttribute("cheese.webhook.subscribers", 0);
      endSpan(span);
      return false;
    },
    handler: async (event) => {
      const outgoing = toWebhookEvent(event);
      if (!outgoing) return;
      const received = contextFromHeaders(event.headers);
      const revision = Number.parseInt(event.headers[STREAM_REVISION_HEADER] ?? "", 10);
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
            {
              eventId: eventIdFor(event.id),
              kind: outgoing.kind,
              data: outgoing.data,
              createdAt: event.publishedAt,
              ...(Number.isSafeInteger(revision) ? { revision } : {}),
              firstDelivery: event.deliveryCount === 1,
              subscribersCaughtUp: subscribersAsked(event),
            },
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
