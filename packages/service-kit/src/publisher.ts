import { randomUUID } from "node:crypto";
import { askAgain } from "@cheese/ask-again";
import type { EventStore, RecordedEvent } from "@cheese/event-store";
import {
  BusUnavailableError,
  type IntegrationEvent,
  jsonCodec,
  KvRecords,
  type MessageBus,
  NoRespondersError,
} from "@cheese/messaging";
import { type Clock, systemClock } from "./clock.ts";
import { followStore } from "./follow.ts";
import type { Logger } from "./logger.ts";
import { CORRELATION_ID_HEADER, REQUEST_ID_HEADER } from "./request-context.ts";
import {
  endSpan,
  extractTrace,
  injectTrace,
  passTrace,
  recordsSpans,
  type Span,
  SpanKind,
  startSpan,
  tracerFor,
} from "./tracing.ts";

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
  /**
   * How long the active relay's lease stands unrenewed before a standby replica takes over
   * (`RELAY_LEASE`, 5 s by default); it is renewed three times as often.
   */
  leaseMs?: number;
  /** The clock the lease's renewals and grace are timed by. */
  clock?: Clock;
}

/** `RELAY_LEASE`'s default. */
export const DEFAULT_RELAY_LEASE_MS = 5_000;

const CHECKPOINT_BUCKET = "publisher_checkpoints";

/**
 * The header carrying the revision of the published event in its stream (its aggregate): the
 * order in which one aggregate's events happened, even where publish times tie or a relay restart
 * published some out of order (the notification service's ordered lanes read it).
 */
export const STREAM_REVISION_HEADER = "x-cheese-stream-revision";
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

/** A relay lease: the replica holding it (null: released by a clean stop, free at once). */
interface Lease {
  holder: string | null;
}

/** The relays' leases, a key per service (`<service>.lease`) in the checkpoints' bucket. */
function leaseRecords(bus: MessageBus): KvRecords<Lease> {
  return new KvRecords(
    bus,
    CHECKPOINT_BUCKET,
    jsonCodec((parsed) =>
      typeof parsed === "object" &&
      parsed !== null &&
      "holder" in parsed &&
      (typeof parsed.holder === "string" || parsed.holder === null)
        ? { holder: parsed.holder }
        : undefined,
    ),
  );
}

/**
 * The subject a relay replica answers on while its process is on the bus: a standby that finds
 * nobody answering for the lease's holder takes the lease at once.
 */
function holderSubject(service: string, holder: string): string {
  return `relay.${service}.holder.${holder}`;
}

/** One run of the relay's subscription, from the checkpoint; a failed publish ends it. */
interface Run {
  /** The events handed to the relay, oldest first, until each one and all before it are acked. */
  queue: { position: number; done: boolean }[];
  inFlight: Set<Promise<void>>;
  failed: boolean;
}

/**
 * The outbox relay: follows the service's own event store and publishes integration events.
 * One replica of a service relays at a time, the holder of the service's lease (below); the
 * others stand by. The event-store event id is the message id, so a replay after a crash, or two
 * replicas relaying the same event for a moment (a takeover), store it once (JetStream
 * deduplication): correctness does not rest on the lease, which only spares the second replica's
 * work and JetStream a second publish. The checkpoint lives in the bus's key-value store, shared
 * by replicas, and only moves forward (`raiseCheckpoint`).
 *
 * The lease is a key-value record naming its holder, written by compare-and-set. The holder
 * renews it every third of `leaseMs`; a renewal that finds another holder stops its relay (its
 * checkpoint saved). A standby takes the lease when the record is absent or released; when
 * nobody answers for its holder (`relay.<service>.holder.<id>`, which every replica serves while
 * its process is on the bus: "no responders" means the holder's process is gone, a crash or a
 * SIGKILL, or off the bus), asked at each of the standby's steps, a third of `leaseMs` apart; or
 * when it has seen the same revision for `leaseMs` by its own clock (the holder stopped renewing
 * but answers: cut off from the bucket, stuck), so no two machines' clocks are compared. A clean
 * stop saves the checkpoint, then releases the lease, and a standby watching it takes over at once
 * (a restart, a rolling update); a replica started after its predecessor died holding the lease
 * takes it at its first step.
 *
 * Publishes go out in event-store order, up to {@link PUBLISH_WINDOW} awaiting their ack at once
 * (one at a time, the ack round trip bounded a service's events per second). The checkpoint
 * advances only over events whose publish and every earlier one's is acked. A failed publish
 * stops the run: the relay starts again after the store-following loop's pause (`followStore`,
 * a second at first) from the checkpoint, republishing what followed it (stored once). Then, and
 * only then, an event may be stored after some of the (at most window − 1) events that followed
 * it; consumers that care use `publishedAt`.
 */
export async function startPublisher(options: PublisherOptions): Promise<{ close(): Promise<void> }> {
  const { service, bus, logger } = options;
  const clock = options.clock ?? systemClock;
  const leaseMs = options.leaseMs ?? DEFAULT_RELAY_LEASE_MS;
  const leases = leaseRecords(bus);
  const key = `${service}.lease`;
  const me = randomUUID();
  /** The lease's revision while this replica holds it. */
  let held: number | undefined;
  /** As a standby: the revision last seen and when (by this clock) it was first seen. */
  let seen: { revision: number; since: number } | undefined;
  let relay: { close(): Promise<void> } | undefined;
  let closed = false;

  const take = async (revision: number) => {
    const taken = await leases.compareAndSet(key, { holder: me }, revision);
    if (taken === undefined) {
      // Another replica took it first, or its holder renewed it after the read: said, so a relay
      // that never resumes shows why.
      logger.warn({ revision }, "event publisher: the relay lease was not at the revision read; not taken");
      return;
    }
    held = taken;
    seen = undefined;
    logger.info("event publisher: holds the relay lease; relaying");
    relay = await startRelay(options);
  };
  const step = async () => {
    if (closed) return;
    if (held !== undefined) {
      const renewed = await leases.compareAndSet(key, { holder: me }, held);
      if (renewed !== undefined) {
        held = renewed;
        // A relay that could not start (its checkpoint unreadable) is started again.
        relay ??= await startRelay(options);
        return;
      }
      // Another replica took it (this one's renewals stopped for the grace): it relays now.
      held = undefined;
      logger.warn("event publisher: another replica took over the relay lease; standing by");
      const ended = relay;
      relay = undefined;
      await ended?.close();
      return;
    }
    const current = await leases.get(key);
    if (current === undefined) return take(0);
    const holder = current.value?.holder;
    if (!holder || holder === me) return take(current.revision);
    const now = clock.now().getTime();
    if (seen?.revision !== current.revision) seen = { revision: current.revision, since: now };
    else if (now - seen.since >= leaseMs) return take(current.revision);
    if (await holderGone(holder)) {
      logger.info("event publisher: nobody answers for the relay lease's holder; taking it over");
      return take(current.revision);
    }
  };
  /** Whether nobody answers for `holder`: its process is gone (or off the bus), not only slow. */
  const holderGone = (holder: string) =>
    bus.request(holderSubject(service, holder), {}, { timeoutMs: leaseMs / 3 }).then(
      () => false,
      (error: unknown) => error instanceof NoRespondersError,
    );
  // This replica answers for itself while its process is on the bus (see `holderGone`).
  const answering = bus.serve(holderSubject(service, me), { queue: me }, async () => ({}));
  /** Steps run one at a time, in order. */
  let stepping: Promise<void> = Promise.resolve();
  const next = () => {
    stepping = stepping.then(step).catch((error: unknown) => {
      logger.warn({ err: error }, "event publisher: the relay lease could not be read or renewed");
    });
    return stepping;
  };

  await onceTheBusAnswers("lease", step, logger);
  const timer = clock.setInterval(() => void next(), Math.max(1, Math.floor(leaseMs / 3)));
  // A released lease is taken at once, not at the next step.
  const watching = await leases
    .watch(key, (change) => {
      if (held === undefined && ("deleted" in change || !change.value?.holder)) void next();
    })
    .catch((error: unknown) => {
      logger.warn({ err: error }, "event publisher: the relay lease cannot be watched; it is read instead");
      return undefined;
    });

  return {
    async close() {
      closed = true;
      timer.cancel();
      await watching?.close();
      await stepping;
      const ended = relay;
      relay = undefined;
      await ended?.close();
      if (held !== undefined) {
        const revision = held;
        held = undefined;
        await leases.compareAndSet(key, { holder: null }, revision).catch(() => {});
      }
      // Answered until the lease is released: a standby asking meanwhile waits for the release.
      await answering.close();
    },
  };
}

/** One replica's relay, while it holds the lease: from the shared checkpoint on. */
async function startRelay(options: PublisherOptions): Promise<{ close(): Promise<void> }> {
  const { service, eventStore, bus, categories, toIntegrationEvent, logger } = options;
  const checkpoints = checkpointRecords(bus);
  // -1: none stored.
  let checkpoint = await onceTheBusAnswers(
    "checkpoint",
    async () => (await checkpoints.get(service))?.value ?? -1,
    logger,
  );
  let saved = checkpoint;
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

  const publish = (event: RecordedEvent, integration: Omit<IntegrationEvent, "id" | "headers">) => {
    const headers: Record<string, string> = {
      [REQUEST_ID_HEADER]: String(event.metadata.requestId ?? ""),
      [CORRELATION_ID_HEADER]: String(event.metadata.correlationId ?? ""),
      [STREAM_REVISION_HEADER]: String(event.revision),
    };
    // The command's trace goes on with the event, when it has one: under a producer span where
    // this service's spans are recorded, as the command left it where they are not (an unrecorded
    // span's only trace is a new span id: extracting, starting and injecting it was ~3 % of the
    // catalogue's CPU during creates).
    let span: Span | undefined;
    if (typeof event.metadata.traceparent === "string") {
      if (recordsSpans(service)) {
        const started = startSpan(
          tracerFor(service),
          `publish ${integration.subject}`,
          SpanKind.PRODUCER,
          extractTrace(event.metadata),
        );
        span = started.span;
        injectTrace(started.context, headers);
      } else {
        passTrace(event.metadata, headers);
      }
    }
    // Called in event-store order and written to the connection at once, so stored in that order.
    return bus.publish({ ...integration, id: event.id, headers }).then(
      () => span?.end(),
      (error: unknown) => {
        if (span) endSpan(span, error);
        throw error;
      },
    );
  };

  /** The current run: created before each subscription, ended by a failed publish. */
  let run: Run = { queue: [], inFlight: new Set(), failed: false };
  const follower = await followStore({
    name: "event publisher",
    eventStore,
    categories,
    logger,
    after: () => (checkpoint === -1 ? undefined : checkpoint),
    beforeSubscribe: async () => {
      run = { queue: [], inFlight: new Set(), failed: false };
      runs.add(run);
    },
    handle: async (event) => {
      const current = run;
      if (current.failed) return; // the run is ending; the checkpoint stays before the failed event
      const entry = { position: event.position, done: false };
      const integration = await toIntegrationEvent(event);
      current.queue.push(entry);
      if (!integration) {
        entry.done = true;
        advance(current);
        return;
      }
      while (current.inFlight.size >= PUBLISH_WINDOW) await Promise.race(current.inFlight);
      const sent: Promise<void> = publish(event, integration).then(
        () => {
          entry.done = true;
          advance(current);
        },
        (error: unknown) => {
          // Stop reading; the loop lets the publishes under way settle, then starts again.
          if (current.failed) return;
          current.failed = true;
          follower.fail(error);
        },
      );
      const tracked = sent.finally(() => current.inFlight.delete(tracked));
      current.inFlight.add(tracked);
    },
    afterFailure: async () => {
      const ended = run;
      ended.failed = true;
      await Promise.allSettled([...ended.inFlight]);
      runs.delete(ended);
    },
  });

  return {
    async close() {
      clearInterval(timer);
      await follower.close();
      await Promise.allSettled([...runs].flatMap((run) => [...run.inFlight]));
      await save().catch(() => {});
    },
  };
}

/** How long a starting relay asks again for its checkpoint or lease while the bus cannot answer yet. */
const CHECKPOINT_READ_PATIENCE_MS = 30_000;

/**
 * `ask`, asked again while the bus cannot answer yet (a bucket just made on a busy cluster can
 * time out its first read), for {@link CHECKPOINT_READ_PATIENCE_MS}, rather than failing the
 * service's start (the process would exit and be started again): the relay's checkpoint and its
 * lease's first step (taken, or the standby's first sight of it).
 */
function onceTheBusAnswers<T>(what: string, ask: () => Promise<T>, logger: Logger): Promise<T> {
  return askAgain(ask, {
    pauseMs: 500,
    forMs: CHECKPOINT_READ_PATIENCE_MS,
    retryOn: (error) => error instanceof BusUnavailableError,
    onRetry: (error) =>
      logger.warn({ err: error }, `event publisher: its ${what} cannot be read yet; asking again`),
  });
}
