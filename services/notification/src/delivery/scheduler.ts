import type { EventStore, RecordedEvent, Subscription } from "@cheese/event-store";
import {
  type Clock,
  DomainError,
  foldEvents,
  handleCommand,
  isoNow,
  type Logger,
  type Timer,
} from "@cheese/service-kit";
import {
  type DeliveryCommand,
  type DeliveryEvent,
  type DeliveryState,
  deliveryDecider,
  deliveryStream,
  type RetryDelays,
} from "../domain/delivery.ts";
import { type WebhookState, webhookDecider, webhookStream } from "../domain/webhook.ts";
import type { Resolver } from "../security/address-policy.ts";
import type { SecretBox } from "../security/secrets.ts";
import { sendAttempt } from "./sender.ts";
import { deliveryHeaders } from "./signing.ts";

export interface SchedulerOptions {
  store: EventStore;
  secrets: SecretBox;
  delays: RetryDelays;
  timeoutMs: number;
  /** An attempt in flight longer than this is taken to have died with its process. */
  leaseMs: number;
  allowPrivate: boolean;
  resolve?: Resolver;
  maxInFlightPerWebhook: number;
  maxInFlight: number;
  /** Due times, leases and timestamps read it; scans sleep on it. */
  clock: Clock;
  logger: Logger;
}

/** What the scheduler keeps per unfinished delivery: its state without the body, and its revision. */
type Tracked = Exclude<DeliveryState, { status: "absent" }> & { revision: number };

/** Longest sleep between scans: a safety net; appends and timers normally wake it first. */
const MAX_SLEEP_MS = 1000;
const FINISHED_MEMORY = 10_000;

/**
 * Makes every due attempt, once, across restarts and replicas.
 *
 * The schedule lives in the event store: each delivery's stream says whether it waits, and until
 * when. At start the scheduler reads every delivery stream (its index of unfinished deliveries is
 * rebuilt, never trusted from memory), then follows new appends. When an attempt is due it claims
 * it by appending AttemptStarted with the expected revision: of several replicas exactly one
 * succeeds. Then it sends, and appends the result. A process killed between the claim and the
 * result leaves an attempt in flight; once its lease runs out, any replica records it as failed
 * (outcome unknown) and the schedule goes on: at most that one attempt may have reached the
 * receiver without us knowing, and the receiver deduplicates it by webhook-id.
 *
 * Isolation: at most `maxInFlightPerWebhook` attempts per registration are in flight in this
 * process, so a receiver that hangs until the time-out holds only its own slots.
 */
export class DeliveryScheduler {
  private readonly index = new Map<number, Tracked>();
  /** Revisions at which recent deliveries finished, so late events about them cost no read. */
  private readonly finished = new Map<number, number>();
  private readonly busy = new Set<number>();
  private readonly inFlightPerWebhook = new Map<number, number>();
  private readonly work = new Set<Promise<void>>();
  private readonly openedSecrets = new Map<number, string>();
  private inFlight = 0;
  private position: number | undefined;
  private subscription: Subscription | undefined;
  private timer: Timer | undefined;
  private tickQueued = false;
  private closed = false;
  private markReady: () => void = () => {};
  /** Resolves once every delivery that existed at start is in the index. */
  readonly ready = new Promise<void>((resolve) => {
    this.markReady = resolve;
  });

  constructor(private readonly options: SchedulerOptions) {}

  start(): void {
    this.subscription = this.options.store.subscribe({
      categories: ["delivery"],
      after: this.position,
      handler: async (event) => {
        await this.apply(event);
        this.position = event.position;
        this.wake();
      },
      onCaughtUp: () => {
        this.markReady();
        this.wake();
      },
      onError: (error) => {
        this.options.logger.error({ err: error }, "delivery scheduler stopped; restarting in 1s");
        if (!this.closed) setTimeout(() => !this.closed && this.start(), 1000).unref();
      },
    });
  }

  /** Looks for due work soon (coalesced). */
  wake(): void {
    if (this.tickQueued || this.closed) return;
    this.tickQueued = true;
    setImmediate(() => {
      this.tickQueued = false;
      this.tick();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.subscription?.close();
    // Attempts in flight end within the receiver time-out; their results are recorded.
    await Promise.allSettled([...this.work]);
  }

  private async apply(event: RecordedEvent): Promise<void> {
    const deliveryId = Number(event.streamName.slice(event.streamName.indexOf("-") + 1));
    const tracked = this.index.get(deliveryId);
    if (tracked && event.revision <= tracked.revision) return;
    if (!tracked && event.revision <= (this.finished.get(deliveryId) ?? -1)) return;
    let next: DeliveryState;
    let revision = event.revision;
    if (tracked) {
      next = deliveryDecider.evolve(tracked, { type: event.type, data: event.data } as DeliveryEvent);
    } else if (event.type === "DeliveryCreated") {
      next = deliveryDecider.evolve(deliveryDecider.initialState(), {
        type: event.type,
        data: event.data,
      } as DeliveryEvent);
    } else {
      // A delivery we stopped tracking (finished) has moved again, e.g. a replay: read it whole.
      const events = await this.options.store.readStream(event.streamName);
      next = foldEvents(deliveryDecider, events);
      revision = events[events.length - 1]?.revision ?? event.revision;
    }
    this.track(deliveryId, next, revision);
  }

  private track(deliveryId: number, state: DeliveryState, revision: number): void {
    const current = this.index.get(deliveryId);
    if (current && current.revision >= revision) return;
    if (revision <= (this.finished.get(deliveryId) ?? -1)) return;
    if (
      state.status === "absent" ||
      state.status === "delivered" ||
      state.status === "cancelled" ||
      state.status === "dead_lettered"
    ) {
      this.index.delete(deliveryId);
      this.finished.set(deliveryId, revision);
      if (this.finished.size > FINISHED_MEMORY) this.finished.delete(this.finished.keys().next().value!);
      return;
    }
    this.finished.delete(deliveryId);
    this.index.set(deliveryId, { ...state, body: "", revision });
  }

  private tick(): void {
    if (this.closed) return;
    this.timer?.cancel();
    const now = this.options.clock.now().getTime();
    let nextWake = now + MAX_SLEEP_MS;
    for (const [deliveryId, tracked] of this.index) {
      if (this.busy.has(deliveryId)) continue;
      if (tracked.status === "pending" || tracked.status === "retry_scheduled") {
        const due = tracked.dueAt ? Date.parse(tracked.dueAt) : now;
        if (due > now) nextWake = Math.min(nextWake, due);
        else if (this.hasCapacity(tracked.webhookId))
          this.run(deliveryId, tracked.webhookId, () => this.attempt(deliveryId));
      } else if (tracked.status === "attempting" && tracked.startedAt) {
        const expiry = Date.parse(tracked.startedAt) + this.options.leaseMs;
        if (expiry > now) nextWake = Math.min(nextWake, expiry);
        else this.run(deliveryId, undefined, () => this.abandon(deliveryId));
      }
    }
    this.timer = this.options.clock.setTimeout(() => this.tick(), nextWake - now);
  }

  private hasCapacity(webhookId: number): boolean {
    return (
      this.inFlight < this.options.maxInFlight &&
      (this.inFlightPerWebhook.get(webhookId) ?? 0) < this.options.maxInFlightPerWebhook
    );
  }

  /** Runs one piece of work on a delivery, counting it against its registration's slots. */
  private run(deliveryId: number, webhookId: number | undefined, job: () => Promise<void>): void {
    this.busy.add(deliveryId);
    if (webhookId !== undefined) {
      this.inFlight++;
      this.inFlightPerWebhook.set(webhookId, (this.inFlightPerWebhook.get(webhookId) ?? 0) + 1);
    }
    const done = job()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error, deliveryId }, "delivery work failed"),
      )
      .finally(() => {
        this.busy.delete(deliveryId);
        if (webhookId !== undefined) {
          this.inFlight--;
          const left = (this.inFlightPerWebhook.get(webhookId) ?? 1) - 1;
          if (left > 0) this.inFlightPerWebhook.set(webhookId, left);
          else this.inFlightPerWebhook.delete(webhookId);
        }
        this.work.delete(done);
        this.wake();
      });
    this.work.add(done);
  }

  /** Applies a command to the delivery's stream; a refusal (someone else moved first) is undefined. */
  private async command(deliveryId: number, command: DeliveryCommand) {
    try {
      const result = await handleCommand(
        this.options.store,
        deliveryStream(deliveryId),
        deliveryDecider,
        command,
      );
      this.track(deliveryId, result.state, result.revision);
      return result;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // Another replica moved first and our index is behind: catch up on this delivery now, so
      // the next scan does not try the same stale move again before the subscription gets here.
      const events = await this.options.store.readStream(deliveryStream(deliveryId));
      const last = events[events.length - 1];
      if (last) this.track(deliveryId, foldEvents(deliveryDecider, events), last.revision);
      return undefined;
    }
  }

  private async attempt(deliveryId: number): Promise<void> {
    const { logger, delays } = this.options;
    const webhookId = this.index.get(deliveryId)?.webhookId;
    if (webhookId === undefined) return;
    const registration = foldEvents(
      webhookDecider,
      await this.options.store.readStream(webhookStream(webhookId)),
    ) as WebhookState;
    if (registration.status !== "active") {
      await this.command(deliveryId, {
        type: "Cancel",
        now: isoNow(this.options.clock),
        reason: "webhook deleted",
      });
      return;
    }
    const claimed = await this.command(deliveryId, { type: "StartAttempt", now: isoNow(this.options.clock) });
    if (claimed?.state.status !== "attempting") return;
    const delivery = claimed.state;
    const { round, attempt } = delivery;

    const secret = this.secretOf(webhookId, registration.registration.secret);
    const headers = deliveryHeaders({
      secret,
      body: delivery.body,
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      deliveryId,
      timestampSeconds: Math.floor(this.options.clock.now().getTime() / 1000),
    });
    const result = await sendAttempt({
      url: registration.registration.url,
      headers,
      body: delivery.body,
      timeoutMs: this.options.timeoutMs,
      allowPrivate: this.options.allowPrivate,
      ...(this.options.resolve ? { resolve: this.options.resolve } : {}),
    });
    const recorded = await this.command(deliveryId, {
      type: "RecordResult",
      round,
      attempt,
      result,
      now: isoNow(this.options.clock),
      delays,
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

  private async abandon(deliveryId: number): Promise<void> {
    const result = await this.command(deliveryId, {
      type: "Abandon",
      now: isoNow(this.options.clock),
      leaseMs: this.options.leaseMs,
      delays: this.options.delays,
    });
    if (result)
      this.options.logger.warn({ deliveryId }, "attempt abandoned by a stopped process recorded as failed");
  }

  private secretOf(webhookId: number, sealed: Parameters<SecretBox["open"]>[0]): string {
    let secret = this.openedSecrets.get(webhookId);
    if (secret === undefined) {
      secret = this.options.secrets.open(sealed);
      this.openedSecrets.set(webhookId, secret);
    }
    return secret;
  }
}
