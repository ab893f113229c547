import type { WebhookEventKind } from "@cheese/contracts";
import {
  BusUnavailableError,
  type Consumer,
  consumeEvents,
  type DeliveredEvent,
  type MessageBus,
} from "@cheese/messaging";
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
import { WEBHOOKS, type WebhookDocument } from "../projections/webhooks.ts";
import type { NotificationDeps } from "./deps.ts";
import { fanOut, hasSubscriber } from "./fan-out.ts";

/**
 * The durable of one source service's integration events (`notification-webhooks-catalogue`…),
 * shared by the replicas: on nats-server 2.9 one filter subject (`events.catalogue.cheese.>`),
 * the exact subjects on 2.10. Created when the first registration wanting one of its kinds is
 * recorded: an event of a source no registration has ever wanted is never fetched.
 */
export const webhookConsumer = (source: string) => `notification-webhooks-${source}`;
/** How long a registration waits for its sources' durables before it is refused (503). */
export const SOURCES_READY_TIMEOUT_MS = 5_000;
/** The one durable of every source before them: replaced by theirs at start, then deleted. */
export const LEGACY_WEBHOOK_CONSUMER = "notification-webhooks";
/**
 * Events of a source's durable in flight at once, across the replicas. One at a time, each
 * event's fan-out (two event-store commits, an ack round trip) bounded the whole pipeline to ~60
 * events/s; concurrent fan-outs also share their commits.
 */
export const WEBHOOK_CONSUMER_IN_FLIGHT = 64;
/**
 * Whether an event's subscribers are asked for before it is handled (its first delivery): the
 * registrations are then caught up once for it, there, and not again in its fan-out.
 */
const subscribersAsked = (event: DeliveredEvent) => event.deliveryCount === 1;

/** The source service of a mapped event (`events.<source>.…`), and its source's events. */
const sourceOf = (subject: string) => subject.split(".")[1]!;
const eventsOf = (source: string) => mappedEvents.filter(({ subject }) => sourceOf(subject) === source);

/** The sources whose events may become one of `kinds`. */
function sourcesOf(kinds: readonly WebhookEventKind[]): Set<string> {
  const wanted = new Set(kinds);
  const sources = new Set<string>();
  for (const [subject, mapped] of kindsBySubject)
    if (mapped.some((kind) => wanted.has(kind))) sources.add(sourceOf(subject));
  return sources;
}

/**
 * The durables this replica consumes, one per source service some registration has wanted a
 * kind of (now or before: they only widen). `want` is awaited before a registration wanting new
 * kinds is recorded, so its source's durable exists, and takes every event published after it,
 * before the registration's 201. Every replica starts with the sources of every registration in
 * its read model (deleted ones too) and follows the registrations recorded elsewhere through
 * the `webhooks` projection, which calls `want` for each.
 */
export class WebhookSources {
  private readonly consumers = new Map<string, Consumer>();
  private closed = false;

  constructor(
    private readonly bus: MessageBus,
    private readonly deps: NotificationDeps,
    private readonly logger: Logger,
  ) {}

  /**
   * Start-up: consumes the sources of every registration recorded so far; on the first start
   * after the single durable of all events, theirs start where it stood, and it is deleted.
   */
  async start(): Promise<void> {
    const documents = await this.deps.readModels
      .collection<WebhookDocument>(WEBHOOKS)
      .find({ events: { $in: [...new Set([...kindsBySubject.values()].flat())] } });
    await this.want(documents.flatMap((document) => document.events));
    if (await this.bus.deleteDurable(LEGACY_WEBHOOK_CONSUMER))
      this.logger.info({ durable: LEGACY_WEBHOOK_CONSUMER }, "replaced by one durable per source; deleted");
  }

  /**
   * Resolves once every source of `kinds`, wanted by registrations already recorded, is consumed
   * here (its durable exists). A durable missing for them (the bus lost its state, or a restore
   * brought the registrations back without it) starts at the stream's first event: every event
   * since the registrations were made is taken again, handled once by its event id.
   */
  async want(kinds: readonly WebhookEventKind[]): Promise<void> {
    await Promise.all([...sourcesOf(kinds)].map((source) => this.consumer(source, "all").ready()));
  }

  /**
   * For a registration about to be recorded: resolves once every source of `kinds` is consumed
   * here, a durable made now starting after the stream's last event. Fails with a 503 when the
   * bus has not made them within `timeoutMs`: the registration is then not recorded (the
   * durables, once made, stay).
   */
  async wantNew(kinds: readonly WebhookEventKind[], timeoutMs: number): Promise<void> {
    const ready = Promise.all([...sourcesOf(kinds)].map((source) => this.consumer(source, "new").ready()));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new BusUnavailableError(`the durables of ${kinds.join(", ")} not made in time`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([ready, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The source's consumer; made now, a missing durable starts where `otherwise` says. */
  private consumer(source: string, otherwise: "all" | "new"): Consumer {
    let consumer = this.consumers.get(source);
    if (!consumer) {
      if (this.closed) throw new Error("webhook sources closed");
      consumer = consumeSource(this.bus, source, otherwise, this.deps, this.logger);
      this.consumers.set(source, consumer);
    }
    return consumer;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.close()));
  }
}

/**
 * Turns one source service's integration events into webhook events, through its durable shared
 * by the replicas (each event handled by one of them). Up to
 * {@link WEBHOOK_CONSUMER_IN_FLIGHT} events are handled at once, so they may be recorded out of
 * publish order; each webhook event's `created_at` is its integration event's publish time, so
 * sorting by it restores publish order. Handling is idempotent by event id, so a redelivery
 * after a crash creates nothing twice.
 */
function consumeSource(
  bus: MessageBus,
  source: string,
  otherwise: "all" | "new",
  deps: NotificationDeps,
  logger: Logger,
): Consumer {
  return consumeEvents(bus, {
    durable: webhookConsumer(source),
    events: eventsOf(source),
    // Created by the first registration wanting the source's kinds: from then on. The first
    // start after the single durable of all events: where that one stood. Missing while
    // registrations for it are recorded: from the stream's start (`WebhookSources.want`).
    startAt: { after: LEGACY_WEBHOOK_CONSUMER, otherwise },
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
