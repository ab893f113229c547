import { type KeyValue, type MessageBus, RemoteError } from "@cheese/messaging";
import type { Logger } from "@cheese/service-kit";

/** Longer than any token lives (sessions: 24 h), so a revocation outlasts what it revokes. */
const BUCKET_TTL_MS = 25 * 3_600_000;
/**
 * How long a "not revoked" answer from the bucket is trusted. The watch reports revocations within
 * milliseconds; this only bounds the damage should a replica's watch ever miss one.
 */
const CONFIRMED_FOR_MS = 30_000;

/** What can be revoked: one token, everything of one customer (erasure), one customer API key. */
export const revocationKey = {
  token: (jti: string) => `jti.${jti}`,
  customer: (customerId: number | string) => `sub.${customerId}`,
  apiKey: (keyId: number) => `key.${keyId}`,
};

/**
 * Revocations shared by every gateway replica through a NATS key-value bucket. Each replica
 * watches the bucket (a revocation made anywhere is known everywhere within milliseconds) and
 * asks the bucket once about anything it has not seen yet, so a replica started after the
 * revocation knows it too.
 */
export class Revocations {
  private bucket: Promise<KeyValue> | undefined;
  /** Revoked keys → when the entry may be forgotten (epoch ms). */
  private readonly revoked = new Map<string, number>();
  /** Keys the bucket said were not revoked, and when it said so. */
  private readonly confirmed = new Map<string, number>();
  private readonly pruner: NodeJS.Timeout;

  constructor(
    private readonly bus: MessageBus,
    private readonly logger: Logger,
  ) {
    this.pruner = setInterval(() => this.prune(), 60_000);
    this.pruner.unref();
  }

  /** Opens the bucket and its watch ahead of the first request. */
  start(): void {
    this.open().catch(() => {});
  }

  /** True when any of the keys is revoked. A bucket that cannot be asked is a 503, never a pass. */
  async isRevoked(keys: string[]): Promise<boolean> {
    try {
      return await this.lookUp(keys);
    } catch (error) {
      this.logger.error({ err: error }, "revocations cannot be checked");
      throw new RemoteError({
        status: 503,
        type: "service_unavailable",
        message: "credentials cannot be checked right now",
      });
    }
  }

  private async lookUp(keys: string[]): Promise<boolean> {
    const now = Date.now();
    if (keys.some((key) => (this.revoked.get(key) ?? 0) > now)) return true;
    const kv = await this.open();
    for (const key of keys) {
      const checked = this.confirmed.get(key);
      if (checked !== undefined && now - checked < CONFIRMED_FOR_MS) continue;
      const entry = await kv.get(key);
      if (entry) {
        this.remember(key, entry.value);
        return true;
      }
      this.confirmed.set(key, now);
    }
    return false;
  }

  /** Revokes a key on every replica; `untilMs` is when it no longer matters (a token's expiry). */
  async revoke(key: string, untilMs = Date.now() + BUCKET_TTL_MS): Promise<void> {
    const value = new TextEncoder().encode(String(untilMs));
    this.remember(key, value);
    await (await this.open()).put(key, value);
  }

  /** Opens the bucket and starts the watch once; a failure is retried on the next call. */
  private open(): Promise<KeyValue> {
    if (!this.bucket) {
      const opening = this.bus.kv("revocations", { ttlMs: BUCKET_TTL_MS }).then((kv) => {
        kv.watch(">", (change) => {
          if (!("deleted" in change)) this.remember(change.key, change.value);
        });
        return kv;
      });
      opening.catch((error) => {
        this.logger.error({ err: error }, "revocation bucket unavailable");
        this.bucket = undefined;
      });
      this.bucket = opening;
    }
    return this.bucket;
  }

  private remember(key: string, value: Uint8Array): void {
    const until = Number(new TextDecoder().decode(value));
    this.revoked.set(key, Number.isFinite(until) ? until : Date.now() + BUCKET_TTL_MS);
    this.confirmed.delete(key);
  }

  private prune(): void {
    const now = Date.now();
    for (const [key, until] of this.revoked) if (until <= now) this.revoked.delete(key);
    for (const [key, at] of this.confirmed) if (now - at >= CONFIRMED_FOR_MS) this.confirmed.delete(key);
  }
}
