import {
  type Credential,
  REVOCATION_TTL_MS,
  REVOCATIONS_BUCKET,
  type RevocationEntry,
  revocationCodec,
  revocationCovers,
  revocationKeys,
  revocationKeysOf,
} from "@cheese/contracts";
import { KvRecords, type MessageBus } from "@cheese/messaging";
import { type Clock, systemClock } from "@cheese/service-kit";

/**
 * The revocations bucket, written here only (logout, API keys, grants, password changes,
 * erasure) and watched by every gateway, which refuses what it holds within milliseconds.
 */
export class Revocations {
  private readonly records: KvRecords<RevocationEntry>;

  constructor(
    bus: MessageBus,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new KvRecords(bus, REVOCATIONS_BUCKET, revocationCodec, { ttlMs: REVOCATION_TTL_MS });
  }

  /** Opens the bucket, making it when it does not exist yet. */
  async open(): Promise<void> {
    await this.records.open();
  }

  /** True when the bucket holds a revocation covering the credential. */
  async isRevoked(credential: Credential): Promise<boolean> {
    for (const key of revocationKeysOf(credential)) {
      const stored = await this.records.get(key);
      // An unreadable entry is taken as a revocation of everything under its key, to be safe.
      if (
        stored &&
        revocationCovers(credential, stored.value ?? { until: Number.POSITIVE_INFINITY }, this.now())
      )
        return true;
    }
    return false;
  }

  /** Revokes one token until it expires (`untilMs`), on every gateway (logout). */
  revokeToken(jti: string, untilMs: number): Promise<number> {
    return this.records.put(revocationKeys.token(jti), { until: untilMs });
  }

  /** Revokes one customer API key on every gateway. */
  revokeApiKey(keyId: number): Promise<number> {
    return this.records.put(revocationKeys.apiKey(keyId), { until: this.now() + REVOCATION_TTL_MS });
  }

  /** Revokes every token of one OAuth grant on every gateway (its refresh tokens end with it). */
  revokeGrant(grantId: string): Promise<number> {
    return this.records.put(revocationKeys.grant(grantId), { until: this.now() + REVOCATION_TTL_MS });
  }

  /** Revokes all of a customer's sessions, OAuth tokens and API keys on every gateway (erasure). */
  revokeCustomer(customerId: number): Promise<number> {
    return this.records.put(revocationKeys.customer(customerId), { until: this.now() + REVOCATION_TTL_MS });
  }

  /**
   * After a password change: the customer's tokens issued under a password version below
   * `belowVersion` are revoked on every gateway, except the session `keep`. A revocation that
   * already covers more (erasure, a later change) stays as it is.
   */
  async revokeOlderCredentials(customerId: number, belowVersion: number, keep: string | null): Promise<void> {
    await this.records.update(revocationKeys.customer(customerId), (current) => {
      const stored = current && (current.value ?? { until: 0 });
      const live = stored && stored.until > this.now();
      if (live && (stored.belowVersion === undefined || stored.belowVersion >= belowVersion))
        return undefined;
      const entry: RevocationEntry = { until: this.now() + REVOCATION_TTL_MS, belowVersion };
      if (keep) entry.keep = keep;
      return entry;
    });
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
