import type { EventMetadata, EventStore, RecordedEvent } from "@cheese/event-store";
import type { SharedBuckets } from "@cheese/rate-limits";
import {
  type Clock,
  DomainError,
  type DueTimers,
  dueTimers,
  type Follower,
  foldEvents,
  followStore,
  handleCommand,
  type Logger,
  readState,
  systemClock,
  type Timer,
} from "@cheese/service-kit";
import {
  type DeliveryCommand,
  type DeliveryEvent,
  type DeliveryState,
  deliveryDecider,
  deliveryStream,
  isFinished,
  type RetryDelays,
  steerOf,
} from "../domain/delivery.ts";
import {
  evolveHealth,
  failedLongEnough,
  type WebhookCommand,
  type WebhookEvent,
  type WebhookState,
  type WebhookStatus,
  webhookDecider,
  webhookStream,
} from "../domain/webhook.ts";
import type { FirstAttempt } from "../handlers/deps.ts";
import { LaneGate } from "./lane-gate.ts";
import { ReceiverCalls, type ReceiverCallsOptions } from "./receiver-calls.ts";
import type { ScheduleSnapshot, SnapshotStore, TraceCarrier } from "./snapshot.ts";
import { ThrottleGate } from "./throttle-gate.ts";

/** The receivers' calls take `secrets`, `signingKeys`, `timeoutMs`, `allowPrivate` and `resolve`. */
export interface SchedulerOptions extends Omit<ReceiverCallsOptions, "clock"> {
  store: EventStore;
  delays: RetryDelays;
  /** An attempt in flight longer than this is taken to have died with its process. */
  leaseMs: number;
  maxInFlightPerWebhook: number;
  maxInFlight: number;
  /** A registration whose attempts have all failed for this long is disabled. */
  disableAfterMs: number;
  /** The most a receiver's `Retry-After` may defer a delivery's next attempt by. */
  retryAfterMaxMs: number;
  /** The registrations' attempt slots, shared by the replicas (`rateLimit`). */
  throttle: Pick<SharedBuckets, "admit">;
  /** Where the schedule is saved and restored from; without it every start reads all history. */
  snapshots?: SnapshotStore;
  /** How often a changed schedule is saved (and always at a graceful stop). */
  snapshotEveryMs?: number;
  /** Told once per WebhookDisabled event seen (by every replica: the reaction must be idempotent). */
  onWebhookDisabled?: (event: RecordedEvent) => Promise<void>;
  /** Due times, leases, the failing period and the scheduler's own timers read this clock. */
  clock?: Clock;
  logger: Logger;
}

/** What the scheduler keeps per unfinished delivery: its state without the body, and its revision. */
type Tracked = Exclude<DeliveryState, { status: "absent" }> & { revision: number };

/** What the scheduler knows of a registration, from its events and its deliveries' results. */
interface WebhookView {
  status: WebhookStatus | "deleted";
  failingSince: string | null;
  /** The failing run a Disable was already asked for, so it is asked once per run. */
  disableAskedFor?: string;
}

const FINISHED_MEMORY = 10_000;
const DEFAULT_SNAPSHOT_EVERY_MS = 30_000;

/**
 * Makes every due attempt, once, across restarts and replicas.
 *
 * The schedule lives in the event store: each delivery's stream says whether it waits, and until
 * when. At start the scheduler restores its last snapshot (the unfinished deliveries and each
 * registration's status at some position) and reads only the delivery and registration events
 * after it; without a snapshot it reads them all. Then it follows new appends, and saves a
 * snapshot now and then. When an attempt is due it claims it by appending AttemptStarted with
 * the expected revision: of several replicas exactly one succeeds. Then it sends, and appends the
 * result. A process killed between the claim and the result leaves an attempt in flight; once
 * its lease runs out, any replica records it as failed (outcome unknown) and the schedule goes
 * on: at most that one attempt may have reached the receiver without us knowing, and the
 * receiver deduplicates it by webhook-id.
 *
 * When each delivery is due (its attempt's due time, or its lease's end for one in flight) is a
 * due timer of the kit (`dueTimers`, keyed by delivery id), set from the delivery's state as it
 * is folded: a due delivery joins the due set, from which each scan starts what it may, oldest
 * event first, the deliveries this process created or last claimed before other replicas'.
 *
 * Deliveries of a paused or disabled registration wait: they are not claimed, whatever their due
 * time; once it is resumed they go out oldest first.
 *
 * A delivery in an ordered lane (domain/lane.ts) is claimed only once its lane, asked before each
 * attempt, releases it as its head (`LaneGate`); the lane's stream decides, so every replica
 * keeps the order.
 *
 * Isolation: at most `maxInFlightPerWebhook` attempts per registration are in flight in this
 * process, so a receiver that hangs until the time-out holds only its own slots.
 *
 * Throttle: an attempt of a registration with a `rateLimit` takes its slot from the shared
 * throttle before it claims the delivery; without one, the delivery stays due and the
 * registration waits until the slot the throttle named (each process asks for one slot of a
 * registration at a time).
 */
export class DeliveryScheduler {
  private readonly index = new Map<number, Tracked>();
  private readonly webhooks = new Map<number, WebhookView>();
  /** Revisions at which recent deliveries finished, so late events about them cost no read. */
  private readonly finished = new Map<number, { revision: number; webhookId: number; lane?: string }>();
  private readonly busy = new Set<number>();
  /** Deliveries whose time has come (their timers ran), until their state moves on. */
  private readonly due = new Set<number>();
  /**
   * Unfinished deliveries this process created (its fan-out) or claimed last: with several
   * replicas following every delivery, each fills its slots with its own first, so that under a
   * backlog they do not both claim the same oldest ones (one claim refused and read back).
   */
  private readonly own = new Set<number>();
  private readonly timers: DueTimers<number>;
  private readonly inFlightPerWebhook = new Map<number, number>();
  private readonly work = new Set<Promise<void>>();
  /**
   * The trace of each unfinished delivery: that of the request or event that created it (or
   * replayed it), from its event's metadata. Its attempts are spans of that trace, and the
   * receiver gets it as `traceparent`.
   */
  private readonly traces = new Map<number, TraceCarrier>();
  private readonly throttles: ThrottleGate;
  private readonly lanes: LaneGate;
  private readonly receivers: ReceiverCalls;
  private inFlight = 0;
  private position: number | undefined;
  private savedPosition: number | undefined;
  private following: Promise<Follower> | undefined;
  private snapshotTimer: Timer | undefined;
  private tickQueued = false;
  private closed = false;
  private isReady = false;
  private markReady: () => void = () => {};
  /** Resolves once every delivery that existed at start is in the index. */
  readonly ready = new Promise<void>((resolve) => {
    this.markReady = () => {
      this.isReady = true;
      resolve();
    };
  });

  private readonly clock: Clock;

  constructor(private readonly options: SchedulerOptions) {
    this.clock = options.clock ?? systemClock;
    this.throttles = new ThrottleGate(options.throttle, this.clock, () => this.wake());
    this.lanes = new LaneGate(options.store, FINISHED_MEMORY);
    const { secrets, signingKeys, timeoutMs, allowPrivate, resolve } = options;
    this.receivers = new ReceiverCalls({
      secrets,
      signingKeys,
      timeoutMs,
      allowPrivate,
      ...(resolve ? { resolve } : {}),
      clock: this.clock,
    });
    this.timers = dueTimers<number>({
      name: "delivery schedule",
      clock: this.clock,
      logger: options.logger,
      // Its work only marks the delivery due: the scan decides what starts (slots, pauses, order).
      run: async (deliveryId) => {
        this.due.add(deliveryId);
        this.wake();
      },
      concurrency: Number.MAX_SAFE_INTEGER,
    });
  }

  private now(): number {
    return this.clock.now().getTime();
  }

  private nowIso(): string {
    return new Date(this.now()).toISOString();
  }

  start(): void {
    void this.restore().then(() => {
      if (this.closed) return;
      this.following = this.follow();
      const every = this.options.snapshotEveryMs ?? DEFAULT_SNAPSHOT_EVERY_MS;
      if (this.options.snapshots) {
        this.snapshotTimer = this.clock.setInterval(() => void this.saveSnapshot(), every);
      }
    });
  }

  /**
   * Looks for due work soon (coalesced). `created`: deliveries this process has just created,
   * which it goes on to prefer over those created elsewhere.
   */
  wake(created: Iterable<number> = []): void {
    for (const deliveryId of created) this.own.add(deliveryId);
    if (this.tickQueued || this.closed) return;
    this.tickQueued = true;
    setImmediate(() => {
      this.tickQueued = false;
      this.tick();
    });
  }

  /**
   * Takes the first attempt of a delivery the fan-out is about to create (`deliveryId`, of
   * `webhookId`, recorded with `metadata`: its trace), so that the append creating it claims the
   * attempt too (`Create`'s `startAt`): one append, one read of the registration and one
   * hand-over fewer per delivery than a claim of its own. A slot of the registration is held for
   * it at once; undefined when it cannot go at once (no slot free, the registration not active as
   * last followed, throttled, or the schedule not following the store yet). The caller tells the
   * handle what the append wrote: `claimed` with the state the delivery has after it (the attempt
   * is sent, as any claimed attempt is), or `unclaimed` (the slot is given back; the delivery, if
   * created, is scheduled as any other). The registration is read after the claim, as for every
   * attempt, so a pause recorded before it withdraws it unsent.
   */
  firstAttempt(deliveryId: number, webhookId: number, metadata: EventMetadata): FirstAttempt | undefined {
    if (this.closed || !this.following) return undefined;
    const status = this.webhooks.get(webhookId)?.status ?? "active";
    if (status !== "active" || this.throttles.has(webhookId) || !this.hasCapacity(webhookId))
      return undefined;
    let settle: (claimed: { state: DeliveryState; revision: number } | undefined) => void = () => {};
    const outcome = new Promise<{ state: DeliveryState; revision: number } | undefined>((resolve) => {
      settle = resolve;
    });
    this.run(deliveryId, webhookId, async (answered) => {
      const claimed = await outcome;
      if (!claimed) return;
      this.keepTrace(deliveryId, metadata);
      this.track(deliveryId, claimed.state, claimed.revision);
      if (claimed.state.status !== "attempting") return;
      this.own.add(deliveryId);
      await this.sendClaimed(webhookId, deliveryId, claimed.state, undefined, answered);
    });
    return {
      startAt: this.nowIso(),
      claimed: (state, revision) => settle({ state, revision }),
      unclaimed: () => settle(undefined),
    };
  }

  /**
   * Scans for due work now and waits until everything it started is recorded. Tests that advance
   * an injected clock use it to know the scheduler has acted (or has had the chance to) before
   * asserting what it did.
   */
  async settle(): Promise<void> {
    for (;;) {
      this.tick();
      if (this.work.size === 0) return;
      await Promise.allSettled([...this.work]);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.timers.close();
    this.snapshotTimer?.cancel();
    this.throttles.close();
    await (await this.following)?.close();
    // Attempts in flight end within the receiver time-out; their results are recorded.
    await Promise.allSettled([...this.work]);
    await this.saveSnapshot();
  }

  /** Saves the schedule if it moved since the last save; a failure is logged, the next save retries. */
  async saveSnapshot(): Promise<void> {
    const { snapshots, logger } = this.options;
    if (!snapshots || !this.isReady || this.position === undefined) return;
    if (this.savedPosition !== undefined && this.position <= this.savedPosition) return;
    const snapshot = this.snapshot();
    try {
      await snapshots.save(snapshot);
      this.savedPosition = snapshot.position;
    } catch (error) {
      logger.warn({ err: error }, "schedule snapshot not saved; the next one will be");
    }
  }

  /** The state as of `position` (deliveries tracked past it are fine: their revisions guard replays). */
  snapshot(): ScheduleSnapshot {
    return {
      version: 1,
      position: this.position ?? -1,
      takenAt: this.nowIso(),
      deliveries: [...this.index.entries()].map(([deliveryId, tracked]) => ({
        deliveryId,
        webhookId: tracked.webhookId,
        eventId: tracked.eventId,
        eventType: tracked.eventType,
        createdAt: tracked.createdAt,
        status: tracked.status as "pending" | "attempting" | "retry_scheduled",
        round: tracked.round,
        attempt: tracked.attempt,
        dueAt: tracked.dueAt,
        startedAt: tracked.startedAt,
        revision: tracked.revision,
        ...(tracked.lane ? { lane: tracked.lane } : {}),
        ...(this.traces.has(deliveryId) ? { trace: this.traces.get(deliveryId) } : {}),
      })),
      webhooks: [...this.webhooks.entries()].map(([webhookId, view]) => ({
        webhookId,
        status: view.status,
        failingSince: view.failingSince,
      })),
    };
  }

  private async restore(): Promise<void> {
    const { snapshots, logger } = this.options;
    if (!snapshots) return;
    let snapshot: ScheduleSnapshot | undefined;
    try {
      snapshot = await snapshots.load();
    } catch (error) {
      logger.warn({ err: error }, "schedule snapshot unreadable; reading every delivery instead");
    }
    if (!snapshot) return;
    for (const { deliveryId, trace, ...entry } of snapshot.deliveries) {
      const tracked = { deliveryId, ...entry, body: "" } as Tracked;
      this.index.set(deliveryId, tracked);
      this.schedule(deliveryId, tracked);
      if (trace) this.traces.set(deliveryId, trace);
    }
    for (const { webhookId, status, failingSince } of snapshot.webhooks) {
      this.webhooks.set(webhookId, { status, failingSince });
    }
    this.position = snapshot.position;
    this.savedPosition = snapshot.position;
    logger.info(
      { position: snapshot.position, waiting: snapshot.deliveries.length },
      "schedule restored from its snapshot",
    );
  }

  /** Follows the delivery and registration events from the schedule's position (`followStore`). */
  private follow(): Promise<Follower> {
    return followStore({
      name: "delivery scheduler",
      eventStore: this.options.store,
      categories: ["delivery", "webhook", "webhooklane"],
      logger: this.options.logger,
      after: () => this.position,
      handle: async (event) => {
        if (event.streamName.startsWith("webhook-")) await this.applyWebhookEvent(event);
        else if (event.streamName.startsWith("webhooklane-")) this.applyLaneEvent(event);
        else await this.applyDeliveryEvent(event);
        this.position = event.position;
        this.wake();
      },
      onCaughtUp: () => {
        this.markReady();
        this.wake();
      },
    });
  }

  private view(webhookId: number): WebhookView {
    let view = this.webhooks.get(webhookId);
    if (!view) {
      view = { status: "active", failingSince: null };
      this.webhooks.set(webhookId, view);
    }
    return view;
  }

  private async applyWebhookEvent(event: RecordedEvent): Promise<void> {
    const webhookEvent = { type: event.type, data: event.data } as WebhookEvent;
    const view = this.view(webhookEvent.data.webhookId);
    switch (webhookEvent.type) {
      case "WebhookRegistered":
      case "WebhookResumed":
        view.status = "active";
        view.failingSince = evolveHealth(view, webhookEvent).failingSince;
        return;
      case "WebhookPaused":
        view.status = "paused";
        view.failingSince = evolveHealth(view, webhookEvent).failingSince;
        return;
      case "WebhookDisabled":
        view.status = "disabled";
        await this.options.onWebhookDisabled?.(event);
        return;
      case "WebhookDeleted":
        view.status = "deleted";
        return;
      default:
        return;
    }
  }

  /** A lane moved: its deliveries that waited for their turn are tried again. */
  private applyLaneEvent(event: RecordedEvent): void {
    for (const deliveryId of this.lanes.moved(event))
      if (this.index.has(deliveryId)) this.due.add(deliveryId);
  }

  /** Keeps a delivery's lane, if it has one, in step with it (`LaneGate.follow`). */
  private async followLane(deliveryId: number, event: DeliveryEvent): Promise<void> {
    const lane = this.index.get(deliveryId)?.lane ?? this.finished.get(deliveryId)?.lane;
    if (lane) await this.lanes.follow(lane, deliveryId, event);
  }

  private async applyDeliveryEvent(event: RecordedEvent): Promise<void> {
    const deliveryId = Number(event.streamName.slice(event.streamName.indexOf("-") + 1));
    const domainEvent = { type: event.type, data: event.data } as DeliveryEvent;
    if (event.type === "DeliveryCreated" || event.type === "DeliveryReplayed")
      this.keepTrace(deliveryId, event.metadata);
    const tracked = this.index.get(deliveryId);
    const finished = this.finished.get(deliveryId);
    // Our own appends are tracked before the subscription brings them back; health still counts
    // each attempt's result here, once, in global order, whoever recorded it.
    if (tracked && event.revision <= tracked.revision) {
      await this.followLane(deliveryId, domainEvent);
      await this.followHealth(tracked.webhookId, domainEvent);
      return;
    }
    if (!tracked && finished && event.revision <= finished.revision) {
      await this.followLane(deliveryId, domainEvent);
      await this.followHealth(finished.webhookId, domainEvent);
      return;
    }
    let next: DeliveryState;
    let revision = event.revision;
    if (tracked || event.type === "DeliveryCreated") {
      // The one fold of a delivery: the decider's evolve, as the deliveries projection folds it.
      next = deliveryDecider.evolve(tracked ?? deliveryDecider.initialState(), domainEvent);
    } else {
      // A delivery we stopped tracking (finished) has moved again, e.g. a replay: read it whole.
      const events = await this.options.store.readStream(event.streamName);
      next = foldEvents(deliveryDecider, events);
      revision = events[events.length - 1]?.revision ?? event.revision;
    }
    this.track(deliveryId, next, revision);
    await this.followLane(deliveryId, domainEvent);
    await this.followHealth(next.status === "absent" ? undefined : next.webhookId, domainEvent);
  }

  /** The trace the delivery's attempts are spans of: the one its creation (or replay) was recorded in. */
  private keepTrace(deliveryId: number, { traceparent, tracestate }: EventMetadata): void {
    if (typeof traceparent !== "string") return;
    this.traces.set(
      deliveryId,
      typeof tracestate === "string" ? { traceparent, tracestate } : { traceparent },
    );
  }

  /** Folds an attempt's result into its registration's health; a long enough failing run disables it. */
  private async followHealth(webhookId: number | undefined, event: DeliveryEvent): Promise<void> {
    if (webhookId === undefined) return;
    if (event.type !== "AttemptFailed" && event.type !== "AttemptSucceeded") return;
    const view = this.view(webhookId);
    view.failingSince = evolveHealth(view, event).failingSince;
    if (event.type !== "AttemptFailed" || view.status !== "active" || view.failingSince === null) return;
    const now = event.data.finishedAt;
    if (!failedLongEnough(view.failingSince, now, this.options.disableAfterMs)) return;
    if (view.disableAskedFor === view.failingSince) return;
    view.disableAskedFor = view.failingSince;
    await this.disable({
      type: "Disable",
      webhookId,
      failingSince: view.failingSince,
      afterMs: this.options.disableAfterMs,
      now,
    });
  }

  private track(deliveryId: number, state: DeliveryState, revision: number): void {
    const current = this.index.get(deliveryId);
    if (current && current.revision >= revision) return;
    if (revision <= (this.finished.get(deliveryId)?.revision ?? -1)) return;
    if (state.status === "absent") return;
    if (isFinished(state)) {
      this.index.delete(deliveryId);
      this.own.delete(deliveryId);
      this.due.delete(deliveryId);
      this.timers.delete(deliveryId);
      this.traces.delete(deliveryId);
      this.finished.set(deliveryId, {
        revision,
        webhookId: state.webhookId,
        ...(state.lane ? { lane: state.lane } : {}),
      });
      if (this.finished.size > FINISHED_MEMORY) this.finished.delete(this.finished.keys().next().value!);
      return;
    }
    this.finished.delete(deliveryId);
    const tracked = { ...state, body: "", revision };
    this.index.set(deliveryId, tracked);
    this.schedule(deliveryId, tracked);
  }

  /** When the delivery is due next: its attempt's due time, or the end of its attempt's lease. */
  private schedule(deliveryId: number, tracked: Tracked): void {
    this.due.delete(deliveryId);
    if (tracked.status === "pending" || tracked.status === "retry_scheduled") {
      this.timers.set(deliveryId, tracked.dueAt ? Date.parse(tracked.dueAt) : this.now());
    } else if (tracked.status === "attempting" && tracked.startedAt) {
      this.timers.set(deliveryId, Date.parse(tracked.startedAt) + this.options.leaseMs);
    } else {
      this.timers.delete(deliveryId);
    }
  }

  /** Deliveries of a paused or disabled registration wait for it to be resumed. */
  private waits(webhookId: number): boolean {
    const status = this.webhooks.get(webhookId)?.status;
    return status === "paused" || status === "disabled";
  }

  /**
   * Starts what it may of the due deliveries: abandoned attempts, then due ones oldest first,
   * this process's own (`own`) before the rest. Only a registration's first due deliveries in
   * that order, as many as it has slots free, are candidates, so a scan costs one pass over the
   * due set however long a registration's backlog: sorting the whole backlog at every freed slot
   * made the scheduler's own CPU grow with its backlog.
   */
  private tick(): void {
    // Nothing starts before the schedule follows the store (a restored snapshot may be behind).
    if (this.closed || !this.following) return;
    const free = this.options.maxInFlight - this.inFlight;
    const oldest = new Map<number, Due[]>();
    for (const deliveryId of this.due) {
      const tracked = this.index.get(deliveryId);
      if (!tracked) {
        this.due.delete(deliveryId);
        continue;
      }
      if (this.busy.has(deliveryId) || this.lanes.waits(deliveryId, tracked.lane)) continue;
      if (tracked.status === "attempting") {
        this.run(deliveryId, undefined, () => this.abandon(deliveryId));
        continue;
      }
      const { webhookId } = tracked;
      const slots = Math.min(
        free,
        this.options.maxInFlightPerWebhook - (this.inFlightPerWebhook.get(webhookId) ?? 0),
      );
      if (slots <= 0 || this.waits(webhookId)) continue;
      const kept = oldest.get(webhookId) ?? [];
      if (kept.length === 0) oldest.set(webhookId, kept);
      keepFirst(kept, [deliveryId, tracked], slots, this.first);
    }
    // Oldest event first, so what waited (a resumed registration's backlog) goes out in order;
    // this process's own deliveries before those of other replicas, which take theirs first.
    const due = [...oldest.values()].flat().sort(this.first);
    for (const [deliveryId, tracked] of due) {
      if (this.hasCapacity(tracked.webhookId) && !this.throttles.waits(tracked.webhookId))
        this.run(deliveryId, tracked.webhookId, (answered) => this.attempt(deliveryId, answered));
    }
  }

  /** Which of two due deliveries to start first: this process's own, then the older. */
  private readonly first = (a: Due, b: Due): number =>
    Number(this.own.has(b[0])) - Number(this.own.has(a[0])) || olderFirst(a, b);

  private hasCapacity(webhookId: number): boolean {
    return (
      this.inFlight < this.options.maxInFlight &&
      (this.inFlightPerWebhook.get(webhookId) ?? 0) < this.options.maxInFlightPerWebhook
    );
  }

  /**
   * Runs one piece of work on a delivery, counting it against its registration's slots. The job
   * may give its registration's slot back early (`answered`: the receiver has answered, what is
   * left is our own recording), so that the receiver's next due delivery goes out meanwhile; the
   * delivery stays busy, and counted in `WEBHOOK_MAX_IN_FLIGHT`, until the job ends.
   */
  private run(
    deliveryId: number,
    webhookId: number | undefined,
    job: (answered: () => void) => Promise<void>,
  ): void {
    this.busy.add(deliveryId);
    let holdsSlot = webhookId !== undefined;
    if (webhookId !== undefined) {
      this.inFlight++;
      this.inFlightPerWebhook.set(webhookId, (this.inFlightPerWebhook.get(webhookId) ?? 0) + 1);
    }
    const answered = () => {
      if (!holdsSlot || webhookId === undefined) return;
      holdsSlot = false;
      const left = (this.inFlightPerWebhook.get(webhookId) ?? 1) - 1;
      if (left > 0) this.inFlightPerWebhook.set(webhookId, left);
      else this.inFlightPerWebhook.delete(webhookId);
      this.wake();
    };
    const done = job(answered)
      .catch((error: unknown) =>
        this.options.logger.error({ err: error, deliveryId }, "delivery work failed"),
      )
      .finally(() => {
        this.busy.delete(deliveryId);
        answered();
        if (webhookId !== undefined) this.inFlight--;
        this.work.delete(done);
        this.wake();
      });
    this.work.add(done);
  }

  /** Applies a command to the delivery's stream; a refusal (someone else moved first) is undefined. */
  private async command(deliveryId: number, command: DeliveryCommand) {
    try {
      // This process most often wrote the delivery last (created it, claimed the attempt): the
      // command decides on what it wrote, unread, unless the store says the stream has moved.
      const result = await handleCommand(
        this.options.store,
        deliveryStream(deliveryId),
        deliveryDecider,
        command,
        { rememberedIsCurrent: true },
      );
      this.track(deliveryId, result.state, result.revision);
      return result;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // Another replica moved first and our index is behind: catch up on this delivery now, so
      // the next scan does not try the same stale move again before the subscription gets here.
      // The delivery is that replica's now.
      this.own.delete(deliveryId);
      const events = await this.options.store.readStream(deliveryStream(deliveryId));
      const last = events[events.length - 1];
      if (last) this.track(deliveryId, foldEvents(deliveryDecider, events), last.revision);
      return undefined;
    }
  }

  private async attempt(deliveryId: number, answered: () => void): Promise<void> {
    const webhookId = this.index.get(deliveryId)?.webhookId;
    if (webhookId === undefined) return;
    try {
      await this.attemptOf(webhookId, deliveryId, answered);
    } finally {
      this.throttles.asked(webhookId);
    }
  }

  private async attemptOf(webhookId: number, deliveryId: number, answered: () => void): Promise<void> {
    // The registration's own stream decides, read just before the claim: a pause or a deletion
    // recorded before this point stops the attempt even if our view has not seen it yet.
    const registration = (await readState(
      this.options.store,
      webhookStream(webhookId),
      webhookDecider,
    )) as WebhookState;
    if (registration.status === "absent" || registration.status === "deleted") {
      await this.command(deliveryId, { type: "Cancel", now: this.nowIso(), reason: "webhook deleted" });
      return;
    }
    if (registration.status !== "active") {
      this.view(webhookId).status = registration.status;
      return;
    }
    // An ordered lane's delivery goes only in its turn (every attempt: its retries hold the lane).
    const lane = this.index.get(deliveryId)?.lane;
    const turn = lane ? await this.lanes.turn(deliveryId, lane) : undefined;
    if (lane && !turn) return;
    const rateLimit = registration.registration.rateLimit ?? null;
    if (!rateLimit) this.throttles.lifted(webhookId);
    else if (!(await this.throttles.admitted(webhookId, rateLimit.perSecond))) return;
    const claimed = await this.command(deliveryId, {
      type: "StartAttempt",
      now: this.nowIso(),
      ...(turn ? { sequence: turn.sequence } : {}),
    });
    if (claimed?.state.status !== "attempting") return;
    this.own.add(deliveryId); // its retries are this process's first
    await this.sendClaimed(webhookId, deliveryId, claimed.state, turn, answered, { slotTaken: true });
  }

  /**
   * Sends an attempt this process has claimed and records its result. `slotTaken`: the
   * registration's throttle was asked before the claim (its slot taken, or none needed); otherwise
   * (an attempt claimed as its delivery was created) a slot is taken here should the registration
   * have a `rateLimit`.
   */
  private async sendClaimed(
    webhookId: number,
    deliveryId: number,
    delivery: Exclude<DeliveryState, { status: "absent" }>,
    turn: { sequence: number } | undefined,
    answered: () => void,
    { slotTaken = false } = {},
  ): Promise<void> {
    const { logger, delays } = this.options;
    const { round, attempt } = delivery;
    // Read again after the claim: a pause recorded before it makes us give the attempt back
    // unsent, so no attempt claimed after a pause ever goes out.
    const current = (await readState(
      this.options.store,
      webhookStream(webhookId),
      webhookDecider,
    )) as WebhookState;
    if (current.status !== "active") {
      await this.command(deliveryId, {
        type: "Withdraw",
        round,
        attempt,
        now: this.nowIso(),
        reason: `webhook ${current.status}`,
      });
      if (current.status === "paused" || current.status === "disabled")
        this.view(webhookId).status = current.status;
      return;
    }

    const perSecond = current.registration.rateLimit?.perSecond;
    const slot = async () => {
      if (perSecond) await this.throttles.slot(webhookId, perSecond, () => this.closed);
    };
    if (!slotTaken) await slot();
    const result = await this.receivers.call({
      webhookId,
      deliveryId,
      registration: current,
      delivery,
      turn,
      trace: this.traces.get(deliveryId),
      beforeAgain: slot,
    });
    const now = this.nowIso();
    // A receiver that asks to be disabled is disabled before its slot is given back and its
    // attempt's failure recorded: this delivery's next attempt is claimed only after that record,
    // another only in a free slot, and every claim reads the registration again, so no attempt
    // starts after its answer, however soon the retry table says (others under way still end).
    const steer = steerOf(result);
    if (steer === "gone" || steer === "disable") await this.disableAsAsked(webhookId, steer, now);
    // The receiver is done with this attempt: its slot goes to its next due delivery while the
    // result is recorded (the result's commit held the slot about as long as the request).
    answered();
    const recorded = await this.command(deliveryId, {
      type: "RecordResult",
      round,
      attempt,
      result,
      now,
      delays,
      retryAfterMaxMs: this.options.retryAfterMaxMs,
    });
    const facts = {
      deliveryId,
      webhookId,
      eventId: delivery.eventId,
      round,
      attempt,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
    };
    if (!recorded)
      logger.warn({ ...facts }, "attempt result discarded: the attempt was already recorded as abandoned");
    else if (result.ok) logger.info(facts, "webhook delivered");
    else
      logger.info({ ...facts, error: result.error, status: recorded.state.status }, "webhook attempt failed");
  }

  /**
   * Disables a registration whose receiver asked (410 Gone, `webhook-delivery: disable`) at `now`,
   * ending the failing run under way, or the one this answer starts.
   */
  private disableAsAsked(webhookId: number, steer: "gone" | "disable", now: string): Promise<void> {
    const failingSince = this.view(webhookId).failingSince ?? now;
    return this.disable({ type: "DisableAsAsked", webhookId, steer, failingSince, now });
  }

  /** Applies a disabling command to its registration; one deleted meanwhile has nothing to disable. */
  private async disable(
    command: Extract<WebhookCommand, { type: "Disable" | "DisableAsAsked" }>,
  ): Promise<void> {
    await handleCommand(this.options.store, webhookStream(command.webhookId), webhookDecider, command).catch(
      (error: unknown) => {
        if (!(error instanceof DomainError)) throw error;
      },
    );
  }

  private async abandon(deliveryId: number): Promise<void> {
    const result = await this.command(deliveryId, {
      type: "Abandon",
      now: this.nowIso(),
      leaseMs: this.options.leaseMs,
      delays: this.options.delays,
    });
    if (result)
      this.options.logger.warn({ deliveryId }, "attempt abandoned by a stopped process recorded as failed");
  }
}

/** A due delivery: its id and what the scheduler tracks of it. */
type Due = [number, Tracked];

/** By the event's time (ISO timestamps compare as strings), then by delivery id. */
function olderFirst([a, x]: Due, [b, y]: Due): number {
  if (x.createdAt !== y.createdAt) return x.createdAt < y.createdAt ? -1 : 1;
  return a - b;
}

/** Keeps in `kept` (sorted by `order`) the `limit` first of what it holds and `due`. */
function keepFirst(kept: Due[], due: Due, limit: number, order: (a: Due, b: Due) => number): void {
  if (kept.length >= limit && order(due, kept[kept.length - 1]!) >= 0) return;
  let at = kept.length;
  while (at > 0 && order(due, kept[at - 1]!) < 0) at--;
  kept.splice(at, 0, due);
  if (kept.length > limit) kept.pop();
}
