import { jsonCodec, KvRecords, type MessageBus } from "@cheese/messaging";
import { type Clock, type Logger, systemClock, type Timer } from "@cheese/service-kit";
import {
  type Admission,
  type BucketState,
  type PlanLimits,
  refillPerMs,
  take,
  tokensAt,
} from "./token-bucket.ts";

/** Past this the shared state counts as unreachable (NATS trouble): see `SharedBucketsOptions.unreachable`. */
const DEADLINE_MS = 1000;
/** A request held back while the shared state is unreachable is asked again after this. */
const UNREACHABLE_RETRY_MS = 1000;
const MAX_REMEMBERED = 10_000;
/** A replica's spending decided on its own reaches the shared key within this (docs/identity.md). */
export const RECONCILE_MS = 50;
/** A view of the shared key older than this is not trusted for a decision of the replica's own. */
const FRESH_MS = 1000;
/** Smaller buckets are always settled with the shared key (exact): one request matters there. */
const LOCAL_MIN_BURST = 100;

export interface SharedBucketsOptions {
  /** The NATS key-value bucket: one record per key (a caller, a webhook registration). */
  bucket: string;
  /** An idle record vanishes after this: longer than any of its buckets takes to be full again. */
  ttlMs: number;
  /**
   * What a request gets when the shared state does not answer within a second: `admit` lets it
   * through (an API must not go down with its limiter), `hold` refuses it for a second (a
   * receiver must not get more than its rate), logged either way.
   */
  unreachable: "admit" | "hold";
}

/** The requests' buckets (the gateway's): `rate_limits`, idle a day, let through when unreachable. */
export const REQUEST_BUCKETS: SharedBucketsOptions = {
  bucket: "rate_limits",
  // Any bucket is full again long before (free: 6 minutes).
  ttlMs: 24 * 3_600_000,
  unreachable: "admit",
};

interface Waiting {
  limits: PlanLimits;
  resolve: (admission: Admission) => void;
}

/** What this replica knows of one caller's shared bucket. */
interface Local {
  /** The shared key's name: the caller id in base64url. */
  key: string;
  /** The shared state as last read or written, its revision (0: no key), and when (epoch ms). */
  view: { state: BucketState | undefined; revision: number; at: number } | undefined;
  /** Tokens this replica admitted on its own that the shared key does not hold yet. */
  pending: number;
  limits: PlanLimits;
  waiting: Waiting[];
  settling: boolean;
  /** The last compare-and-set started; the next one waits for it, even past the deadline. */
  last: Promise<unknown>;
  reconcile: Timer | undefined;
}

/**
 * Token buckets shared by every replica: one key per caller in a NATS key-value bucket, changed
 * only by compare-and-set on the revision read, so two replicas never both write over each
 * other's spending. The gateway's request rate limits ({@link REQUEST_BUCKETS}) and the
 * notification service's webhook throttle (buckets of one, `perSecond`) are both these.
 *
 * A replica decides on its own while its fresh view of the key (minus what it spent since)
 * holds more than half the burst (buckets of {@link LOCAL_MIN_BURST} or more): no round trip on
 * the request path. That spending is written to the key within {@link RECONCILE_MS}, which also
 * brings the other replicas' spending into the view. Near the bottom of the bucket, and for
 * small buckets (the free plan's 10), requests wait for a compare-and-set as before: a
 * caller's concurrent requests queue and are settled together, one compare-and-set per batch.
 * The overshoot across R replicas is at most (R − 1) × ⌊burst / 2⌋, paid back from the refill
 * (the shared bucket goes into debt), so the hourly rate holds (docs/identity.md "Rate limits").
 */
export class SharedBuckets {
  private readonly records: KvRecords<BucketState>;
  /** By caller id. */
  private readonly keys = new Map<string, Local>();

  constructor(
    bus: MessageBus,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
    private readonly options: SharedBucketsOptions = REQUEST_BUCKETS,
  ) {
    this.records = new KvRecords(bus, options.bucket, bucketStateCodec, { ttlMs: options.ttlMs });
  }

  /**
   * The caller's admission for one request: at once (not a promise) when this replica decides on
   * its own, else once the shared key has been read and written.
   */
  admit(callerId: string, limits: PlanLimits): Admission | Promise<Admission> {
    const local = this.localOf(callerId, limits);
    const { key } = local;
    local.limits = limits;
    const now = this.clock.now().getTime();
    if (local.waiting.length === 0 && local.view && now - local.view.at <= FRESH_MS) {
      const available = tokensAt(local.view.state, limits, now) - local.pending;
      if (limits.burst >= LOCAL_MIN_BURST && available - 1 >= Math.ceil(limits.burst / 2)) {
        local.pending += 1;
        this.scheduleReconcile(key, local);
        return take({ tokens: available, at: now }, limits, now, 1).admissions[0]!;
      }
    }
    return new Promise((resolve) => {
      local.waiting.push({ limits, resolve });
      if (!local.settling) void this.drain(key, local);
    });
  }

  private localOf(callerId: string, limits: PlanLimits): Local {
    let local = this.keys.get(callerId);
    if (!local) {
      if (this.keys.size >= MAX_REMEMBERED) this.forgetIdle();
      local = {
        key: Buffer.from(callerId).toString("base64url"),
        view: undefined,
        pending: 0,
        limits,
        waiting: [],
        settling: false,
        last: Promise.resolve(),
        reconcile: undefined,
      };
      this.keys.set(callerId, local);
    }
    return local;
  }

  private forgetIdle(): void {
    for (const [callerId, local] of this.keys) {
      if (local.pending === 0 && !local.settling && local.waiting.length === 0) this.keys.delete(callerId);
    }
  }

  private scheduleReconcile(key: string, local: Local): void {
    if (local.reconcile) return;
    local.reconcile = this.clock.setTimeout(() => {
      local.reconcile = undefined;
      if (!local.settling) void this.drain(key, local);
    }, RECONCILE_MS);
  }

  /** Settles the waiting requests in batches, and writes this replica's own spending. */
  private async drain(key: string, local: Local): Promise<void> {
    local.settling = true;
    try {
      for (;;) {
        const batch = local.waiting.splice(0);
        if (batch.length === 0 && local.pending === 0) return;
        const limits = batch.length > 0 ? batch[batch.length - 1]!.limits : local.limits;
        let admissions: Admission[];
        try {
          const work = local.last.then(() => this.settle(key, local, limits, batch.length));
          local.last = work.catch(() => {});
          admissions = await withDeadline(work, DEADLINE_MS);
        } catch (error) {
          if (batch.length === 0) {
            // Only this replica's own spending was to be written: it stays pending, tried again.
            this.scheduleReconcile(key, local);
            return;
          }
          admissions = this.unreachable(error, limits, batch.length);
        }
        for (const [i, waiting] of batch.entries()) waiting.resolve(admissions[i]!);
        if (batch.length === 0) return;
      }
    } finally {
      local.settling = false;
      if (local.waiting.length > 0) void this.drain(key, local);
      else if (local.pending > 0) this.scheduleReconcile(key, local);
    }
  }

  /** The admissions of requests the shared state did not answer in time for. */
  private unreachable(error: unknown, limits: PlanLimits, count: number): Admission[] {
    const { bucket, unreachable } = this.options;
    if (unreachable === "admit") {
      this.logger.warn({ err: error, bucket }, "rate limit state unavailable; letting requests through");
      return take(undefined, limits, this.clock.now().getTime(), count).admissions;
    }
    this.logger.warn({ err: error, bucket }, "rate limit state unavailable; holding requests back");
    const held: Admission = {
      allowed: false,
      remaining: 0,
      resetSeconds: Math.ceil(limits.burst / refillPerMs(limits) / 1000),
      retryAfterSeconds: UNREACHABLE_RETRY_MS / 1000,
      retryAfterMs: UNREACHABLE_RETRY_MS,
    };
    return Array.from({ length: count }, () => held);
  }

  /**
   * One compare-and-set: the shared state, less what this replica spent on its own since, less
   * the `count` requests admitted from what is left. Refusals spend nothing.
   */
  private async settle(key: string, local: Local, limits: PlanLimits, count: number): Promise<Admission[]> {
    // The view this replica holds, when it has one, saves the first read.
    const cached = local.view;
    const from =
      cached === undefined
        ? undefined
        : cached.revision > 0
          ? { key, value: cached.state, revision: cached.revision }
          : null;
    let seen: NonNullable<Local["view"]> | undefined;
    let admissions: Admission[] = [];
    let spent = 0;
    try {
      const written = await this.records.update(
        key,
        (current) => {
          const now = this.clock.now().getTime();
          seen =
            seen === undefined && cached
              ? cached
              : { state: current?.value, revision: current?.revision ?? 0, at: now };
          spent = local.pending;
          const before: BucketState = { tokens: tokensAt(seen.state, limits, now) - spent, at: now };
          const taken = take(before, limits, now, count);
          admissions = taken.admissions;
          return spent === 0 && !admissions.some((a) => a.allowed) ? undefined : taken.state;
        },
        from,
      );
      if (!written) {
        local.view = seen;
        return admissions;
      }
      local.pending -= spent;
      local.view = { state: written.value, revision: written.revision, at: this.clock.now().getTime() };
      return admissions;
    } catch (error) {
      local.view = undefined;
      throw error;
    }
  }
}

const bucketStateCodec = jsonCodec<BucketState>((parsed) => {
  const state = parsed as BucketState | null;
  return state && typeof state.tokens === "number" && typeof state.at === "number" ? state : undefined;
});

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
