import {
  type Credential,
  identityRpc,
  REVOCATION_TTL_MS,
  REVOCATIONS_BUCKET,
  type RevocationEntry,
  revocationCodec,
  revocationCovers,
  revocationKeys,
  revocationKeysOf,
} from "@cheese/contracts";
import {
  type Closable,
  callRpc,
  KvBucketMissingError,
  KvRecords,
  type MessageBus,
  RemoteError,
} from "@cheese/messaging";
import { type Clock, type Logger, systemClock } from "@cheese/service-kit";

/**
 * How long a "not revoked" answer from the bucket is trusted. The watch reports revocations within
 * milliseconds; this only bounds the damage should a replica's watch ever miss one.
 */
const CONFIRMED_FOR_MS = 30_000;

/** The key `answers` reads: never written, so its read costs the bucket one lookup. */
const READINESS_PROBE_KEY = revocationKeys.token("readiness-probe");

/** How often a replica started before the customer service made the bucket tries to open it again. */
const OPEN_AGAIN_MS = 1_000;

/** How often a replica reads the bucket to know that it answers (`answers`). */
const PROBE_EVERY_MS = 5_000;

/**
 * How long after the bucket's last answer a replica still says it can check credentials. A
 * bucket shared by every replica loses its leader for seconds at a time (a NATS node rejoining
 * after a partition forces an election: 4-9 s a round, seen up to ~10 s); meanwhile each replica
 * still checks the credentials it confirmed within `CONFIRMED_FOR_MS`, and saying none of them
 * ready would take every gateway out of its balancer at once.
 */
const ANSWERED_WITHIN_MS = CONFIRMED_FOR_MS;

/**
 * The revocations this service writes (docs/identity.md), as a caller checking credentials knows
 * them (the gateway, `@cheese/customer/known-revocations`): it watches the bucket, read only (a
 * revocation is known on every replica within milliseconds), and asks it once about anything it
 * has not seen yet, so a replica started after the revocation knows it too. A revocation the
 * caller makes (a logout) is asked of this service.
 */
export class KnownRevocations {
  private readonly records: KvRecords<RevocationEntry>;
  private watching: Promise<Closable> | undefined;
  /** The watch is running (`watching` resolved and not failed since). */
  private watched = false;
  /** The revocation keys of each credential checked, while the caller keeps it (`revocationKeysOf`). */
  private readonly keysOf = new WeakMap<Credential, string[]>();
  private readonly revoked = new Map<string, RevocationEntry>();
  /** Keys the bucket said were not revoked, and when it said so. */
  private readonly confirmed = new Map<string, number>();
  /** Waiting for a key to be revoked (`whenRevoked`). */
  private readonly waiting = new Map<string, Set<() => void>>();
  /** The read `answers` relies on, in flight: one at a time. */
  private probing: Promise<void> | undefined;
  /** When the bucket last answered that read; undefined: not yet. */
  private answeredAt: number | undefined;

  constructor(
    private readonly bus: MessageBus,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new KvRecords(bus, REVOCATIONS_BUCKET, revocationCodec, {
      ttlMs: REVOCATION_TTL_MS,
      readOnly: true,
    });
    clock.setInterval(() => this.prune(), 60_000);
    clock.setInterval(() => void this.probe(), PROBE_EVERY_MS);
  }

  /**
   * Opens the bucket and its watch ahead of the first request, trying again every second while it
   * cannot (on a first start the gateway may be up before the customer service has made the bucket).
   */
  start(): void {
    this.open().catch(() => {
      this.clock.setTimeout(() => this.start(), OPEN_AGAIN_MS);
    });
  }

  /**
   * True when the credential is revoked. A bucket that cannot be asked is a 503, never a pass.
   * Answered at once (not a promise) when the watch runs and every key of the credential is known:
   * revoked, or confirmed not revoked by the bucket within the last 30 s. A caller that keeps the
   * credential object for its next request (the gateway, per verified token) saves working out
   * its keys again.
   */
  isRevoked(credential: Credential): boolean | Promise<boolean> {
    let candidates = this.keysOf.get(credential);
    if (!candidates) {
      candidates = revocationKeysOf(credential);
      this.keysOf.set(credential, candidates);
    }
    const now = this.now();
    let confirmed = this.watched;
    for (const key of candidates) {
      if (revocationCovers(credential, this.revoked.get(key), now)) return true;
      const checked = this.confirmed.get(key);
      if (checked === undefined || now - checked >= CONFIRMED_FOR_MS) confirmed = false;
    }
    return confirmed ? false : this.askBucket(credential, candidates);
  }

  private async askBucket(credential: Credential, candidates: string[]): Promise<boolean> {
    try {
      return await this.lookUp(credential, candidates);
    } catch (error) {
      this.logger.error({ err: error }, "revocations cannot be checked");
      throw new RemoteError({
        status: 503,
        type: "service_unavailable",
        message: "credentials cannot be checked right now",
      });
    }
  }

  /**
   * Whether credentials can be checked now: the bucket's watch runs and the bucket answered a read
   * (asked of its leader, every `PROBE_EVERY_MS`) within `ANSWERED_WITHIN_MS`; before its first
   * answer, this waits for one. The gateway's `/readyz` says it, so a gateway is not sent requests
   * it could only answer "credentials cannot be checked right now" (503).
   */
  async answers(): Promise<boolean> {
    if (this.answeredAt === undefined) {
      try {
        await this.open();
      } catch {
        return false;
      }
      await this.probe();
    }
    return this.watched && this.answeredAt !== undefined && this.now() - this.answeredAt < ANSWERED_WITHIN_MS;
  }

  /** Reads a key that is never written from the bucket, unless that read is in flight. */
  private probe(): Promise<void> {
    this.probing ??= (async () => {
      try {
        await this.records.get(READINESS_PROBE_KEY);
        this.answeredAt = this.now();
      } catch {
        // unanswered: `answeredAt` stays as it was
      } finally {
        this.probing = undefined;
      }
    })();
    return this.probing;
  }

  /** Revokes one token until it expires (`untilMs`), on every replica (logout). */
  async revokeToken(jti: string, untilMs: number): Promise<void> {
    await callRpc(this.bus, identityRpc.revokeToken, { jti, until: untilMs }, { timeoutMs: this.timeoutMs });
    this.remember(revocationKeys.token(jti), { until: untilMs });
  }

  /**
   * Resolves once this replica knows the customer's credentials are revoked: all of them, or with
   * `belowVersion`, those under an older password; false after `timeoutMs`.
   */
  async whenCustomerRevoked(customerId: number, timeoutMs: number, belowVersion?: number): Promise<boolean> {
    const key = revocationKeys.customer(customerId);
    const known = () => {
      const entry = this.revoked.get(key);
      if (entry === undefined || entry.until <= this.now()) return false;
      if (entry.belowVersion === undefined) return true;
      return belowVersion !== undefined && entry.belowVersion >= belowVersion;
    };
    if (known()) return true;
    return new Promise<boolean>((resolve) => {
      const listeners = this.waiting.get(key) ?? new Set();
      this.waiting.set(key, listeners);
      const done = (result: boolean) => {
        listeners.delete(check);
        clearTimeout(timer);
        resolve(result);
      };
      const check = () => known() && done(true);
      const timer = setTimeout(() => done(known()), timeoutMs);
      listeners.add(check);
      this.open().catch(() => {});
    });
  }

  private async lookUp(credential: Credential, candidates: string[]): Promise<boolean> {
    if (candidates.some((key) => this.covers(credential, this.revoked.get(key)))) return true;
    await this.open();
    for (const key of candidates) {
      const checked = this.confirmed.get(key);
      if (checked !== undefined && this.now() - checked < CONFIRMED_FOR_MS) continue;
      const stored = await this.records.get(key);
      if (stored) {
        this.remember(key, stored.value);
        if (this.covers(credential, this.revoked.get(key))) return true;
      } else {
        this.confirmed.set(key, this.now());
      }
    }
    return false;
  }

  /** Whether a stored revocation applies to the credential. */
  private covers(credential: Credential, entry: RevocationEntry | undefined): boolean {
    return revocationCovers(credential, entry, this.now());
  }

  /** Opens the bucket and starts the watch once; a failure is retried on the next call. */
  private open(): Promise<Closable> {
    if (!this.watching) {
      const watching = this.records.watch(">", (change) => {
        if (!("deleted" in change)) this.remember(change.key, change.value);
      });
      watching.then(
        () => {
          this.watched = this.watching === watching;
        },
        (error) => {
          if (error instanceof KvBucketMissingError) this.logger.info("revocation bucket not made yet");
          else this.logger.error({ err: error }, "revocation bucket unavailable");
          this.watching = undefined;
          this.watched = false;
        },
      );
      this.watching = watching;
    }
    return this.watching;
  }

  /** An unreadable entry is taken as a revocation of everything under its key, to be safe. */
  private remember(key: string, entry: RevocationEntry | undefined): void {
    this.revoked.set(key, entry ?? { until: this.now() + REVOCATION_TTL_MS });
    this.confirmed.delete(key);
    for (const listener of this.waiting.get(key) ?? []) listener();
  }

  private prune(): void {
    const now = this.now();
    for (const [key, entry] of this.revoked) if (entry.until <= now) this.revoked.delete(key);
    for (const [key, at] of this.confirmed) if (now - at >= CONFIRMED_FOR_MS) this.confirmed.delete(key);
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
