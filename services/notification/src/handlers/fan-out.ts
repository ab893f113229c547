import type { WebhookEventKind } from "@cheese/contracts";
import type { EventMetadata } from "@cheese/event-store";
import { commandAlongside, counter, handleCommand, isoNow } from "@cheese/service-kit";
import { type DeliveryCommand, deliveryDecider, deliveryStream } from "../domain/delivery.ts";
import {
  envelopeBody,
  type RecordedWebhookEvent,
  webhookEventDecider,
  webhookEventStream,
} from "../domain/event-mapping.ts";
import { type CompiledFilter, compileFilter } from "../domain/filter.ts";
import { aggregateOf, laneDecider, laneStream } from "../domain/lane.ts";
import { WEBHOOKS, type WebhookDocument } from "../projections/webhooks.ts";
import type { FirstAttempt, NotificationDeps } from "./deps.ts";

export interface Outgoing {
  eventId: string;
  kind: WebhookEventKind;
  data: Record<string, unknown>;
  /**
   * The envelope's `created_at`: when the integration event behind it was published (so that
   * sorting by it restores publish order, however the fan-outs interleave); now by default.
   */
  createdAt?: string;
  /**
   * The revision of the event in its aggregate's stream (the integration event's
   * `STREAM_REVISION_HEADER`): orders an ordered lane where publish times tie.
   */
  revision?: number;
  /**
   * Nothing can have been recorded for this event yet: it is the bus's first delivery of it (the
   * bus stores an event id once; a handling that failed half way is redelivered, counted as
   * such). Its record is then not looked for before the subscribers are.
   */
  firstDelivery?: boolean;
  /**
   * The registrations were caught up after the event was published (the consumer asked
   * {@link hasSubscriber} before handing it over): its subscribers are read from the read model
   * as it stands, without a second catch-up (a head read of the event store per event).
   */
  subscribersCaughtUp?: boolean;
}

const filteredOut = counter({
  name: "cheese_webhook_events_filtered_total",
  help: "Events a registration's filter kept from it (outcome rejected: the filter was false; error: it could not be evaluated on the event, e.g. a field the event lacks)",
  labelNames: ["outcome"],
});

/** Who receives: the given registrations only (webhook.test), or every subscriber but some. */
export type Targets = { only: number[] } | { except: number[] };

/**
 * Records an outgoing event with one delivery per target and creates those deliveries, in one
 * append (one group commit). Targets are the registrations subscribed to the kind (paused and
 * disabled ones too: their deliveries wait), or the given ones (webhook.test).
 * Safe to repeat: the recorded plan is reused, its missing deliveries created, and creating an
 * existing delivery does nothing. Several fan-outs may run at once (the consumer handles events
 * concurrently).
 */
export async function fanOut(
  deps: NotificationDeps,
  outgoing: Outgoing,
  metadata: EventMetadata,
  targets: Targets = { except: [] },
): Promise<RecordedWebhookEvent | undefined> {
  const stream = webhookEventStream(outgoing.eventId);
  const [existing] = outgoing.firstDelivery ? [] : await deps.store.readStream(stream, { maxCount: 1 });
  let recorded = existing?.data as RecordedWebhookEvent | undefined;
  let written = false;
  if (!recorded) {
    const createdAt = outgoing.createdAt ?? isoNow(deps.clock);
    let webhookIds: number[];
    let ordered = new Set<number>();
    /** Registrations whose first attempt may be claimed as the delivery is created (unthrottled). */
    let unthrottled = new Set<number>();
    if ("only" in targets) webhookIds = targets.only;
    else {
      const wanting = (await subscribers(deps, outgoing.kind, !outgoing.subscribersCaughtUp)).filter(
        ({ id }) => !targets.except.includes(id),
      );
      if (wanting.length === 0) return undefined;
      const input = { type: outgoing.kind, created_at: createdAt, data: outgoing.data };
      const passing = wanting.filter((subscriber) => passes(subscriber, input));
      webhookIds = passing.map(({ id }) => id);
      ordered = new Set(passing.filter((subscriber) => subscriber.ordered).map(({ id }) => id));
      unthrottled = new Set(passing.filter((subscriber) => !subscriber.throttled).map(({ id }) => id));
    }
    if (webhookIds.length === 0 && "only" in targets) return undefined;
    // An ordered registration's deliveries join their aggregate's lane; no lane, no aggregate.
    const aggregate = ordered.size > 0 ? aggregateOf(outgoing.kind, outgoing.data) : undefined;
    // Asked for together, the ids share one check of the allocator's block (one after the other,
    // each waited for a check of its own: a turn of the event loop and a read per delivery).
    const deliveryIds = await Promise.all(webhookIds.map(() => deps.deliveryIds.nextId()));
    const deliveries = webhookIds.map((webhookId, i) => {
      const lane =
        aggregate !== undefined && ordered.has(webhookId) ? laneStream(webhookId, aggregate) : undefined;
      return { webhookId, deliveryId: deliveryIds[i]!, ...(lane ? { lane } : {}) };
    });
    const planned: RecordedWebhookEvent = {
      eventId: outgoing.eventId,
      type: outgoing.kind,
      createdAt,
      body: envelopeBody(outgoing.eventId, outgoing.kind, createdAt, outgoing.data),
      ...(outgoing.revision !== undefined ? { revision: outgoing.revision } : {}),
      deliveries,
    };
    // A delivery that may go at once has its first attempt taken by the local scheduler, which
    // holds a slot for it: the append that creates it claims the attempt too (not one in a lane,
    // which waits its turn, nor a throttled registration's, which waits for its slot).
    const firstAttempts = new Map<number, FirstAttempt>();
    for (const { deliveryId, webhookId, lane } of deliveries) {
      const first =
        lane || !unthrottled.has(webhookId) ? undefined : deps.firstAttempt(deliveryId, webhookId, metadata);
      if (first) firstAttempts.set(deliveryId, first);
    }
    // The deliveries are created in the append that records their plan: one write, atomic where
    // the store is (SQLite). Where it writes the streams one after the other (EventStoreDB), the
    // plan goes first, so a crash between them leaves a plan whose missing deliveries a repeat of
    // the event creates (below).
    try {
      const result = await handleCommand(
        deps.store,
        stream,
        webhookEventDecider,
        { type: "Record", event: planned },
        {
          metadata,
          // On the bus's first delivery of the event its record cannot exist: appended unread.
          newStream: outgoing.firstDelivery ?? false,
          alongside: deliveries.map((delivery) =>
            commandAlongside(
              deps.store,
              deliveryStream(delivery.deliveryId),
              deliveryDecider,
              create(deps, planned, delivery, firstAttempts.get(delivery.deliveryId)?.startAt),
              {
                metadata,
                after: true,
                appended: ({ state, revision }) => {
                  firstAttempts.get(delivery.deliveryId)?.claimed(state, revision);
                  firstAttempts.delete(delivery.deliveryId);
                },
              },
            ),
          ),
        },
      );
      recorded = result.state.recorded!;
      written = result.newEvents.length > 0;
    } finally {
      for (const first of firstAttempts.values()) first.unclaimed();
    }
  }
  const plan = recorded;
  // An ordered registration's delivery joins its lane once it exists (a lane never holds a
  // delivery that was not created). Its first attempt waits the lane's settle time, by which the
  // earlier events of its aggregate have joined too; one asked before it joined waits for the
  // lane to move.
  await Promise.all(
    plan.deliveries.map(({ deliveryId, lane }) =>
      lane
        ? handleCommand(
            deps.store,
            lane,
            laneDecider,
            {
              type: "Join",
              deliveryId,
              createdAt: plan.createdAt,
              ...(plan.revision !== undefined ? { revision: plan.revision } : {}),
            },
            { metadata },
          )
        : undefined,
    ),
  );
  // A plan this fan-out did not write (a repeat of the event, or another replica's fan-out of it
  // first) may lack deliveries: a crash between its streams' writes on a store that is not
  // atomic. Its deliveries are created again; one that exists is left as it is.
  if (!written)
    await Promise.all(
      plan.deliveries.map((delivery) =>
        handleCommand(
          deps.store,
          deliveryStream(delivery.deliveryId),
          deliveryDecider,
          create(deps, plan, delivery),
          // Most likely there: read first.
          { metadata },
        ),
      ),
    );
  deps.wakeScheduler(written ? plan.deliveries.map(({ deliveryId }) => deliveryId) : []);
  return recorded;
}

/** The command that creates one delivery of a plan (its first attempt claimed at `startAt`, if given). */
function create(
  deps: NotificationDeps,
  plan: RecordedWebhookEvent,
  { webhookId, deliveryId, lane }: RecordedWebhookEvent["deliveries"][number],
  startAt?: string,
): DeliveryCommand {
  const facts = {
    deliveryId,
    webhookId,
    eventId: plan.eventId,
    eventType: plan.type,
    body: plan.body,
    createdAt: plan.createdAt,
    ...(lane ? { lane } : {}),
  };
  return {
    type: "Create",
    facts,
    delays: lane ? settled(deps) : deps.delays,
    ...(startAt !== undefined ? { startAt } : {}),
  };
}

/**
 * Whether any registration (paused and disabled ones too) subscribes to one of `kinds` now: the
 * projection is caught up once, then every kind is answered from the read model.
 */
export async function hasSubscriber(
  deps: NotificationDeps,
  kinds: readonly WebhookEventKind[],
): Promise<boolean> {
  if (kinds.length === 0) return false;
  // A registration made just before the event must see it: wait for the projection first.
  await registrationsCaughtUp(deps);
  for (const kind of kinds) if ((await subscribersNow(deps, kind)).length > 0) return true;
  return false;
}

/** The catch-up the asks of this turn of the event loop wait for, per deps. */
const catchingUp = new WeakMap<NotificationDeps, Promise<boolean>>();

/**
 * The registrations' projection caught up once for every ask of one turn of the event loop: the
 * consumer handles up to 64 events at once, each asking, and a catch-up reads the event store's
 * head. It starts after the turn's asks (on the next check phase), so its head is read after each
 * of them was made and covers every registration made before it; an ask made once it has started
 * waits for the next one.
 */
function registrationsCaughtUp(deps: NotificationDeps): Promise<boolean> {
  let shared = catchingUp.get(deps);
  if (!shared) {
    shared = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      catchingUp.delete(deps);
      return deps.webhooks.catchUp();
    });
    catchingUp.set(deps, shared);
  }
  return shared;
}

/** A registration wanting a kind, with its filter (compiled once per filter text). */
interface Subscriber {
  id: number;
  filter: CompiledFilter | null;
  ordered: boolean;
  /** It has a `rateLimit`: each attempt waits for its slot. */
  throttled: boolean;
}

/**
 * Whether a subscriber's filter lets the event through; one that keeps it out is counted (not
 * logged: it is what the operator asked for).
 */
function passes(subscriber: Subscriber, input: Parameters<CompiledFilter>[0]): boolean {
  if (!subscriber.filter) return true;
  const { matched, error } = subscriber.filter(input);
  if (!matched) filteredOut.inc({ outcome: error ? "error" : "rejected" });
  return matched;
}

const compiled = new Map<string, CompiledFilter | null>();
/** A stored filter compiled; one that no longer compiles (not expected: it was checked) matches nothing. */
function compiledFilter(source: string | null): CompiledFilter | null {
  if (!source) return null;
  let filter = compiled.get(source);
  if (filter === undefined) {
    try {
      filter = compileFilter(source);
    } catch {
      filter = () => ({ matched: false, error: "the filter does not compile" });
    }
    if (compiled.size >= 1000) compiled.clear();
    compiled.set(source, filter);
  }
  return filter;
}

async function subscribers(
  deps: NotificationDeps,
  kind: WebhookEventKind,
  catchUp: boolean,
): Promise<Subscriber[]> {
  if (catchUp) await registrationsCaughtUp(deps); // as in hasSubscriber
  return subscribersNow(deps, kind);
}

/** The subscribers of each kind, as found at a count of `webhookChanges`, per deps. */
const known = new WeakMap<
  NotificationDeps,
  { changes: number; byKind: Map<WebhookEventKind, Subscriber[]> }
>();

/** The subscribers of `kind` in the read model as it stands (the caller has caught it up). */
async function subscribersNow(deps: NotificationDeps, kind: WebhookEventKind): Promise<Subscriber[]> {
  // If the projection has applied nothing since the last lookup, its answer stands (the lookup
  // was a tenth of this service's CPU per event, most events having no subscriber).
  const changes = deps.webhookChanges();
  const cached = known.get(deps);
  const hit = cached?.changes === changes ? cached.byKind.get(kind) : undefined;
  if (hit) return hit;
  const found = await deps.readModels
    .collection<WebhookDocument>(WEBHOOKS)
    .find({ deleted: false, events: kind }, { sort: { _id: 1 } });
  const wanting = found.map((document) => ({
    id: document._id,
    filter: compiledFilter(document.webhook.filter ?? null),
    ordered: document.webhook.ordered ?? false,
    throttled: (document.webhook.rateLimit ?? null) !== null,
  }));
  if (deps.webhookChanges() === changes) {
    const byKind = cached?.changes === changes ? cached.byKind : new Map<WebhookEventKind, Subscriber[]>();
    byKind.set(kind, wanting);
    known.set(deps, { changes, byKind });
  }
  return wanting;
}

/**
 * The retry table of a delivery in an ordered lane: its first attempt no sooner than the lane's
 * settle time after publication, so that the earlier events of its aggregate, fanned out at the
 * same moment (perhaps by another replica), have joined the lane ahead of it.
 */
const settled = (deps: NotificationDeps) => [
  Math.max(deps.delays[0] ?? 0, deps.laneSettleMs),
  ...deps.delays.slice(1),
];
