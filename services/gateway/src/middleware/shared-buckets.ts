import { type KeyValue, KvConflictError, type MessageBus } from "@cheese/messaging";
import { type Clock, type Logger, systemClock } from "@cheese/service-kit";
import { type Admission, type BucketState, type PlanLimits, take } from "./token-bucket.ts";

/** Idle buckets vanish after this; any bucket is full again long before (free: 6 minutes). */
const BUCKET_TTL_MS = 24 * 3_600_000;
/** Past this the limiter lets the request through rather than hold it up (NATS trouble). */
const DEADLINE_MS = 1000;
const MAX_CAS_ATTEMPTS = 25;
const MAX_REMEMBERED = 10_000;

interface Waiting {
  limits: PlanLimits;
  resolve: (admission: Admission) => void;
}

/**
 * Token buckets shared by every gateway replica: one key per caller in a NATS key-value bucket,
 * changed only by compare-and-set on the revision read, so two replicas never both spend the
 * same token. Within a replica, a caller's requests queue up and are settled together, one
 * compare-and-set per batch, so a burst of parallel requests does not fight over the key.
 */
export class SharedBuckets {
  private bucket: Promise<KeyValue> | undefined;
  private readonly waiting = new Map<string, Waiting[]>();
  /** The last state and revision this replica saw per key; a stale one costs one failed CAS. */
  private readonly seen = new Map<string, { state: BucketState | undefined; revision: number }>();

  constructor(
    private readonly bus: MessageBus,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
  ) {}

  admit(callerId: string, limits: PlanLimits): Promise<Admission> {
    const key = Buffer.from(callerId).toString("base64url");
    return new Promise((resolve) => {
      const queue = this.waiting.get(key);
      if (queue) {
        queue.push({ limits, resolve });
        return;
      }
      this.waiting.set(key, [{ limits, resolve }]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    for (;;) {
      const queue = this.waiting.get(key) ?? [];
      const batch = queue.splice(0);
      if (batch.length === 0) {
        this.waiting.delete(key);
        return;
      }
      const limits = batch[batch.length - 1]!.limits;
      let admissions: Admission[];
      try {
        admissions = await withDeadline(this.settle(key, limits, batch.length), DEADLINE_MS);
      } catch (error) {
        this.logger.warn({ err: error }, "rate limit state unavailable; letting requests through");
        admissions = take(undefined, limits, this.clock.now().getTime(), batch.length).admissions;
      }
      for (const [i, waiting] of batch.entries()) waiting.resolve(admissions[i]!);
    }
  }

  private async settle(key: string, limits: PlanLimits, count: number): Promise<Admission[]> {
    const kv = await this.open();
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      let seen = attempt === 0 ? this.seen.get(key) : undefined;
      if (!seen) {
        const entry = await kv.get(key);
        seen = entry ? { state: decode(entry.value), revision: entry.revision } : undefined;
      }
      const { admissions, state } = take(seen?.state, limits, this.clock.now().getTime(), count);
      // Refusals spend nothing, so there is nothing to write.
      if (!admissions.some((a) => a.allowed)) return admissions;
      try {
        const value = encode(state);
        const revision = seen ? await kv.update(key, value, seen.revision) : await kv.create(key, value);
        if (this.seen.size >= MAX_REMEMBERED) this.seen.clear();
        this.seen.set(key, { state, revision });
        return admissions;
      } catch (error) {
        if (!(error instanceof KvConflictError)) throw error;
        this.seen.delete(key);
      }
    }
    throw new Error(`rate limit state of ${key} kept changing concurrently`);
  }

  private open(): Promise<KeyValue> {
    if (!this.bucket) {
      const opening = this.bus.kv("rate_limits", { ttlMs: BUCKET_TTL_MS });
      opening.catch(() => {
        this.bucket = undefined;
      });
      this.bucket = opening;
    }
    return this.bucket;
  }
}

function encode(state: BucketState): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(state));
}

function decode(value: Uint8Array): BucketState | undefined {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(value)) as BucketState;
    return typeof parsed.tokens === "number" && typeof parsed.at === "number" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
