import { type Closable, jsonCodec, KvRecords, type MessageBus, RemoteError } from "@cheese/messaging";
import { type Clock, type Logger, systemClock } from "@cheese/service-kit";

/** Longer than any token lives (sessions: 24 h), so a revocation outlasts what it revokes. */
const BUCKET_TTL_MS = 25 * 3_600_000;
/**
 * How long a "not revoked" answer from the bucket is trusted. The watch reports revocations within
 * milliseconds; this only bounds the damage should a replica's watch ever miss one.
 */
const CONFIRMED_FOR_MS = 30_000;

/**
 * What can be revoked: one token, one customer API key, one OAuth grant (every token of it), or
 * a customer's credentials.
 */
const keys = {
  token: (jti: string) => `jti.${jti}`,
  apiKey: (keyId: number) => `key.${keyId}`,
  grant: (grantId: string) => `grant.${grantId}`,
  customer: (customerId: number | string) => `sub.${customerId}`,
};

/** A credential presented: the revocations that may apply to it. */
export interface Credential {
  jti?: string;
  keyId?: number;
  grantId?: string;
  customerId?: number | string;
  /** The customer's password version it was issued under (sessions and OAuth grants). */
  passwordVersion?: number;
}

/**
 * A revocation as stored: until when it matters (epoch ms, the bucket forgets it after), and for
 * a customer's, which credentials it covers: all of them when `belowVersion` is absent
 * (erasure), or, after a password change, the tokens issued under a password version below
 * `belowVersion` except the session `keep` that made the change. Entries of older gateways are
 * plain numbers: `until`.
 */
interface Entry {
  until: number;
  belowVersion?: number;
  keep?: string;
}

/**
 * Revocations shared by every gateway replica through a NATS key-value bucket. Each replica
 * watches the bucket (a revocation made anywhere is known everywhere within milliseconds) and
 * asks the bucket once about anything it has not seen yet, so a replica started after the
 * revocation knows it too.
 */
export class Revocations {
  private readonly records: KvRecords<Entry>;
  private watching: Promise<Closable> | undefined;
  private readonly revoked = new Map<string, Entry>();
  /** Keys the bucket said were not revoked, and when it said so. */
  private readonly confirmed = new Map<string, number>();
  /** Waiting for a key to be revoked (`whenRevoked`). */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(
    bus: MessageBus,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new KvRecords(bus, "revocations", entryCodec, { ttlMs: BUCKET_TTL_MS });
    clock.setInterval(() => this.prune(), 60_000);
  }

  /** Opens the bucket and its watch ahead of the first request. */
  start(): void {
    this.open().catch(() => {});
  }

  /** True when the credential is revoked. A bucket that cannot be asked is a 503, never a pass. */
  async isRevoked(credential: Credential): Promise<boolean> {
    try {
      return await this.lookUp(credential);
    } catch (error) {
      this.logger.error({ err: error }, "revocations cannot be checked");
      throw new RemoteError({
        status: 503,
        type: "service_unavailable",
        message: "credentials cannot be checked right now",
      });
    }
  }

  /** Revokes one token until it expires (`untilMs`), on every replica (logout). */
  revokeToken(jti: string, untilMs: number): Promise<void> {
    return this.put(keys.token(jti), { until: untilMs });
  }

  /** Revokes one customer API key on every replica. */
  revokeApiKey(keyId: number): Promise<void> {
    return this.put(keys.apiKey(keyId), { until: this.now() + BUCKET_TTL_MS });
  }

  /** Revokes every token of one OAuth grant on every replica (its refresh tokens end with it). */
  revokeGrant(grantId: string): Promise<void> {
    return this.put(keys.grant(grantId), { until: this.now() + BUCKET_TTL_MS });
  }

  /** Revokes all of a customer's sessions, OAuth tokens and API keys on every replica (erasure). */
  revokeCustomer(customerId: number): Promise<void> {
    return this.put(keys.customer(customerId), { until: this.now() + BUCKET_TTL_MS });
  }

  /**
   * After a password change: the customer's tokens issued under a password version below
   * `belowVersion` are revoked on every replica, except the session `keep`. A revocation that
   * already covers more (erasure, a later change) stays as it is.
   */
  async revokeOlderCredentials(customerId: number, belowVersion: number, keep: string | null): Promise<void> {
    const key = keys.customer(customerId);
    await this.open();
    const stored = await this.records.get(key);
    const current = stored && (stored.value ?? { until: 0 });
    const live = current && current.until > this.now();
    if (live && (current.belowVersion === undefined || current.belowVersion >= belowVersion)) return;
    const entry: Entry = { until: this.now() + BUCKET_TTL_MS, belowVersion };
    if (keep) entry.keep = keep;
    await this.put(key, entry);
  }

  /**
   * Resolves once this replica knows the customer's credentials are revoked: all of them, or with
   * `belowVersion`, those under an older password; false after `timeoutMs`.
   */
  async whenCustomerRevoked(customerId: number, timeoutMs: number, belowVersion?: number): Promise<boolean> {
    const key = keys.customer(customerId);
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

  private async lookUp(credential: Credential): Promise<boolean> {
    const candidates: string[] = [];
    if (credential.jti !== undefined) candidates.push(keys.token(credential.jti));
    if (credential.keyId !== undefined) candidates.push(keys.apiKey(credential.keyId));
    if (credential.grantId !== undefined) candidates.push(keys.grant(credential.grantId));
    if (credential.customerId !== undefined) candidates.push(keys.customer(credential.customerId));
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

  /** Whether a stored revocation applies to the credential (a method: see "Closures on hot paths"). */
  private covers(credential: Credential, entry: Entry | undefined): boolean {
    if (entry === undefined || entry.until <= this.now()) return false;
    if (entry.belowVersion === undefined) return true;
    // A password change ends tokens of older versions; API keys are revoked one by one.
    if (credential.passwordVersion === undefined || credential.jti === entry.keep) return false;
    return credential.passwordVersion < entry.belowVersion;
  }

  private async put(key: string, entry: Entry): Promise<void> {
    this.remember(key, entry);
    await this.open();
    await this.records.put(key, entry);
  }

  /** Opens the bucket and starts the watch once; a failure is retried on the next call. */
  private open(): Promise<Closable> {
    if (!this.watching) {
      const watching = this.records.watch(">", (change) => {
        if (!("deleted" in change)) this.remember(change.key, change.value);
      });
      watching.catch((error) => {
        this.logger.error({ err: error }, "revocation bucket unavailable");
        this.watching = undefined;
      });
      this.watching = watching;
    }
    return this.watching;
  }

  /** An unreadable entry is taken as a revocation of everything under its key, to be safe. */
  private remember(key: string, entry: Entry | undefined): void {
    this.revoked.set(key, entry ?? { until: this.now() + BUCKET_TTL_MS });
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

/** Entries as stored; older gateways stored plain numbers (`until`). Undefined: unreadable. */
const entryCodec = jsonCodec<Entry>((parsed) => {
  if (typeof parsed === "number" && Number.isFinite(parsed)) return { until: parsed };
  if (!parsed || typeof parsed !== "object" || typeof (parsed as Entry).until !== "number") return undefined;
  const { until, belowVersion, keep } = parsed as Entry;
  const entry: Entry = { until };
  if (typeof belowVersion === "number") entry.belowVersion = belowVersion;
  if (typeof keep === "string") entry.keep = keep;
  return entry;
});
