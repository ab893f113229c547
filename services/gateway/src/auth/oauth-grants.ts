import { createHash, randomBytes } from "node:crypto";
import { type KeyValue, KvConflictError, type MessageBus } from "@cheese/messaging";
import { type Clock, systemClock } from "@cheese/service-kit";
import type { Scope } from "../env.ts";
import type { Revocations } from "./revocations.ts";

/** What an authorization code stands for until it is exchanged. */
export interface CodeGrant {
  clientId: string;
  redirectUri: string;
  /** Whether the authorization request named the redirect URI (then the token request must too). */
  redirectUriGiven: boolean;
  customerId: number;
  username: string;
  scopes: Scope[];
  codeChallenge: string;
  /** The customer's password version at sign-in: a password change ends the grant. */
  passwordVersion: number;
  expiresAt: number;
}

/**
 * What a customer granted a client: the family of every token issued from one sign-in (the
 * access tokens carry its id, `gid`; the refresh tokens point to it). Customers list and revoke
 * their grants; revoking one ends all its tokens.
 */
export interface Grant {
  id: string;
  clientId: string;
  customerId: number;
  scopes: Scope[];
  passwordVersion: number;
  createdAt: number;
  lastUsedAt: number;
  /** When it ends unless refreshed first: its refresh token's expiry (implicit: its token's). */
  expiresAt: number;
}

/** What a refresh token stands for; kept once spent, so that a reuse is recognised. */
interface RefreshEntry {
  grantId: string;
  clientId: string;
  customerId: number;
  scopes: Scope[];
  expiresAt: number;
  spent?: true;
}

export type Redeemed =
  | { ok: true; grant: Grant; scopes: Scope[] }
  /** Unknown, expired, someone else's, or refused by the check: nothing was spent. */
  | { ok: false; reused: false }
  /** A spent token came back (RFC 9700 §4.14.2): its whole grant was revoked. */
  | { ok: false; reused: true };

/** A code once exchanged: kept (for the code bucket's life) so that a replay is recognised. */
interface SpentCode {
  spent: true;
  customerId: number;
  /** The grant its exchange started, once started. */
  grantId?: string;
  /** A replay came while the exchange was under way: the exchange revokes what it started. */
  replayed?: true;
}

export type RedeemedCode =
  | {
      ok: true;
      code: CodeGrant;
      /**
       * Records the grant the exchange started; false when the code was replayed meanwhile, and
       * the grant then revoked (the exchange answers invalid_grant).
       */
      started(grantId: string): Promise<boolean>;
    }
  /** Unknown, expired or garbage: nothing to revoke. */
  | { ok: false; reused: false }
  /** Exchanged before (RFC 6749 §4.1.2): the grant that exchange started is revoked. */
  | { ok: false; reused: true };

/** Upper bound of a code's life (RFC 6749 recommends at most 10 minutes; we keep 60 s, docs/identity.md). */
const CODE_BUCKET_TTL_MS = 60_000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3_600_000;
const MAX_CAS_ATTEMPTS = 25;

/**
 * Authorization codes, refresh tokens and grants, kept in NATS key-value buckets so any gateway
 * replica can redeem what another issued. Only a hash of a code or token is stored. Redeeming is
 * compare-and-set on the entry's revision: of two racing redemptions exactly one wins. A
 * customer's grants are one entry (`cust.<id>`, changed by compare-and-set), the list the
 * customer sees and the refresh path checks: a grant gone from it is over.
 */
export class OAuthGrants {
  private readonly buckets = new Map<string, Promise<KeyValue>>();

  constructor(
    private readonly bus: MessageBus,
    private readonly codeTtlMs: number,
    private readonly revocations: Revocations,
    private readonly clock: Clock = systemClock,
  ) {}

  async issueCode(grant: Omit<CodeGrant, "expiresAt">): Promise<string> {
    const code = randomBytes(32).toString("base64url");
    const kv = await this.bucket("oauth_codes", CODE_BUCKET_TTL_MS);
    await kv.create(digest(code), encode({ ...grant, expiresAt: this.now() + this.codeTtlMs }));
    return code;
  }

  /**
   * The code's grant, once (compare-and-set: of racing exchanges one wins). A code exchanged
   * before is refused and the grant its exchange started revoked with every token of it
   * (RFC 6749 §4.1.2); one being exchanged right now is marked, and that exchange revokes what it
   * started (`started` answers false).
   */
  async redeemCode(code: string): Promise<RedeemedCode> {
    const kv = await this.bucket("oauth_codes", CODE_BUCKET_TTL_MS);
    const key = digest(code);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const entry = await kv.get(key);
      const stored = entry && decode<CodeGrant | SpentCode>(entry.value);
      if (!entry || !stored) return { ok: false, reused: false };
      try {
        if ("spent" in stored) {
          if (stored.grantId) await this.revokeGrant(stored.customerId, stored.grantId);
          else if (!stored.replayed)
            await kv.update(key, encode({ ...stored, replayed: true }), entry.revision);
          return { ok: false, reused: true };
        }
        const spent: SpentCode = { spent: true, customerId: stored.customerId };
        const revision = await kv.update(key, encode(spent), entry.revision);
        if (stored.expiresAt <= this.now()) return { ok: false, reused: false };
        return {
          ok: true,
          code: stored,
          started: (grantId) => this.codeStarted(kv, key, revision, spent, grantId),
        };
      } catch (error) {
        if (!(error instanceof KvConflictError)) throw error; // else: changed meanwhile, read again
      }
    }
    throw new Error("an authorization code kept changing concurrently");
  }

  private async codeStarted(
    kv: KeyValue,
    key: string,
    revision: number,
    spent: SpentCode,
    grantId: string,
  ): Promise<boolean> {
    try {
      await kv.update(key, encode({ ...spent, grantId }), revision);
      return true;
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
      // Only a replay changes a spent code: end what this exchange started.
      await this.revokeGrant(spent.customerId, grantId);
      return false;
    }
  }

  /** Records a new grant of the customer's, living `lifetimeMs` unless refreshed. */
  async startGrant(
    grant: Pick<Grant, "clientId" | "customerId" | "scopes" | "passwordVersion">,
    lifetimeMs: number,
  ): Promise<Grant> {
    const now = this.now();
    const started: Grant = {
      ...grant,
      id: randomBytes(16).toString("base64url"),
      createdAt: now,
      lastUsedAt: now,
      expiresAt: now + lifetimeMs,
    };
    await this.changeGrants(grant.customerId, (grants) => [...grants, started]);
    return started;
  }

  /** A refresh token of the grant, for `scopes` (the grant's or fewer); the grant lives 30 days on. */
  async issueRefreshToken(grant: Grant, scopes: Scope[]): Promise<string> {
    const token = randomBytes(32).toString("base64url");
    const now = this.now();
    const entry: RefreshEntry = {
      grantId: grant.id,
      clientId: grant.clientId,
      customerId: grant.customerId,
      scopes,
      expiresAt: now + REFRESH_TOKEN_TTL_MS,
    };
    await (await this.bucket("oauth_refresh_tokens", REFRESH_TOKEN_TTL_MS)).create(
      digest(token),
      encode(entry),
    );
    await this.changeGrants(grant.customerId, (grants) =>
      grants.map((g) => (g.id === grant.id ? { ...g, lastUsedAt: now, expiresAt: entry.expiresAt } : g)),
    );
    return token;
  }

  /**
   * Spends a refresh token of `clientId`, but only once `check` accepts it (a refresh refused for
   * a reason that may pass, such as a scope asked wrongly, must not cost the client its only
   * refresh token) and only while its grant lives. A token spent before is a reuse: someone
   * holds a copy, so the whole grant is revoked (RFC 9700 §4.14.2).
   */
  async redeemRefreshToken(
    token: string,
    clientId: string,
    check: (entry: { customerId: number; scopes: Scope[] }) => Promise<Scope[] | undefined>,
  ): Promise<Redeemed> {
    const refused = { ok: false, reused: false } as const;
    const kv = await this.bucket("oauth_refresh_tokens", REFRESH_TOKEN_TTL_MS);
    const stored = await kv.get(digest(token));
    const entry = stored && decode<RefreshEntry>(stored.value);
    if (!stored || !entry || entry.clientId !== clientId) return refused;
    if (entry.spent) return this.reused(entry);
    if (entry.expiresAt <= this.now()) return refused;
    const grant = (await this.grantsOf(entry.customerId)).find((g) => g.id === entry.grantId);
    if (!grant) return refused;
    const revoked = await this.revocations.isRevoked({
      customerId: grant.customerId,
      grantId: grant.id,
      passwordVersion: grant.passwordVersion,
    });
    if (revoked) return refused;
    const scopes = await check(entry);
    if (!scopes) return refused;
    try {
      await kv.update(stored.key, encode({ ...entry, spent: true }), stored.revision);
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
      return this.reused(entry); // spent by a racing request with the same token
    }
    return { ok: true, grant, scopes };
  }

  /** RFC 7009: a refresh token of `clientId` ends its grant; anything else changes nothing. */
  async revokeByRefreshToken(token: string, clientId: string): Promise<void> {
    const kv = await this.bucket("oauth_refresh_tokens", REFRESH_TOKEN_TTL_MS);
    const stored = await kv.get(digest(token));
    const entry = stored && decode<RefreshEntry>(stored.value);
    if (!entry || entry.clientId !== clientId) return;
    await this.revokeGrant(entry.customerId, entry.grantId);
  }

  /** The customer's live grants, oldest first. */
  async grantsOf(customerId: number): Promise<Grant[]> {
    const entry = await (await this.grantBucket()).get(grantsKey(customerId));
    const now = this.now();
    return ((entry && decode<Grant[]>(entry.value)) ?? []).filter((grant) => grant.expiresAt > now);
  }

  /** Ends a grant and every token of it, on every replica; false when the customer has no such grant. */
  async revokeGrant(customerId: number, grantId: string): Promise<boolean> {
    let found = false;
    await this.changeGrants(customerId, (grants) => {
      found = grants.some((grant) => grant.id === grantId);
      return grants.filter((grant) => grant.id !== grantId);
    });
    if (found) await this.revocations.revokeGrant(grantId);
    return found;
  }

  /** After a password change: the grants made under an older password end. */
  async revokeGrantsBefore(customerId: number, passwordVersion: number): Promise<void> {
    let ended: Grant[] = [];
    await this.changeGrants(customerId, (grants) => {
      ended = grants.filter((grant) => grant.passwordVersion < passwordVersion);
      return grants.filter((grant) => grant.passwordVersion >= passwordVersion);
    });
    for (const grant of ended) await this.revocations.revokeGrant(grant.id);
  }

  /** An erased customer's grants are forgotten (its tokens are revoked with the customer). */
  async forgetCustomer(customerId: number): Promise<void> {
    await (await this.grantBucket()).delete(grantsKey(customerId));
  }

  private async reused(entry: RefreshEntry): Promise<Redeemed> {
    await this.revokeGrant(entry.customerId, entry.grantId);
    return { ok: false, reused: true };
  }

  /** Compare-and-set on the customer's grants; expired ones are dropped on the way. */
  private async changeGrants(customerId: number, change: (grants: Grant[]) => Grant[]): Promise<void> {
    const kv = await this.grantBucket();
    const key = grantsKey(customerId);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const entry = await kv.get(key);
      const now = this.now();
      const live = ((entry && decode<Grant[]>(entry.value)) ?? []).filter((grant) => grant.expiresAt > now);
      const value = encode(change(live));
      try {
        if (entry) await kv.update(key, value, entry.revision);
        else await kv.create(key, value);
        return;
      } catch (error) {
        if (!(error instanceof KvConflictError)) throw error;
      }
    }
    throw new Error(`the grants of customer ${customerId} kept changing concurrently`);
  }

  private grantBucket(): Promise<KeyValue> {
    return this.bucket("oauth_grants", REFRESH_TOKEN_TTL_MS);
  }

  /** Opened once; a failure (NATS away) is retried on the next request instead of remembered. */
  private bucket(name: string, ttlMs: number): Promise<KeyValue> {
    let opening = this.buckets.get(name);
    if (!opening) {
      opening = this.bus.kv(name, { ttlMs });
      opening.catch(() => this.buckets.delete(name));
      this.buckets.set(name, opening);
    }
    return opening;
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}

const grantsKey = (customerId: number) => `cust.${customerId}`;

function digest(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

function encode(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

/** The JSON stored, or undefined for garbage. */
function decode<T>(value: Uint8Array): T | undefined {
  try {
    return JSON.parse(new TextDecoder().decode(value)) as T;
  } catch {
    return undefined;
  }
}
