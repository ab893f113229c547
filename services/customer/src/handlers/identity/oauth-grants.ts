import { createHash, randomBytes } from "node:crypto";
import type { TokenScope as Scope } from "@cheese/contracts";
import { jsonCodec, type KvRecord, KvRecords, type MessageBus } from "@cheese/messaging";
import { type Clock, systemClock } from "@cheese/service-kit";
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

/**
 * Authorization codes, refresh tokens and grants, kept in NATS key-value buckets so any gateway
 * replica can redeem what another issued. Only a hash of a code or token is stored. Redeeming is
 * compare-and-set on the entry's revision: of two racing redemptions exactly one wins. A
 * customer's grants are one entry (`cust.<id>`, changed by compare-and-set), the list the
 * customer sees and the refresh path checks: a grant gone from it is over.
 */
export class OAuthGrants {
  private readonly codes: KvRecords<CodeGrant | SpentCode>;
  private readonly refreshTokens: KvRecords<RefreshEntry>;
  private readonly grants: KvRecords<Grant[]>;

  constructor(
    bus: MessageBus,
    private readonly codeTtlMs: number,
    private readonly revocations: Revocations,
    private readonly clock: Clock = systemClock,
  ) {
    this.codes = new KvRecords(bus, "oauth_codes", jsonCodec(), { ttlMs: CODE_BUCKET_TTL_MS });
    this.refreshTokens = new KvRecords(bus, "oauth_refresh_tokens", jsonCodec(), {
      ttlMs: REFRESH_TOKEN_TTL_MS,
    });
    this.grants = new KvRecords(bus, "oauth_grants", jsonCodec(), { ttlMs: REFRESH_TOKEN_TTL_MS });
  }

  async issueCode(grant: Omit<CodeGrant, "expiresAt">): Promise<string> {
    const code = randomBytes(32).toString("base64url");
    const created = await this.codes.create(digest(code), {
      ...grant,
      expiresAt: this.now() + this.codeTtlMs,
    });
    if (created === undefined) throw new Error("an authorization code was issued twice");
    return code;
  }

  /**
   * The code's grant, once (compare-and-set: of racing exchanges one wins). A code exchanged
   * before is refused and the grant its exchange started revoked with every token of it
   * (RFC 6749 §4.1.2); one being exchanged right now is marked, and that exchange revokes what it
   * started (`started` answers false).
   */
  async redeemCode(code: string): Promise<RedeemedCode> {
    const key = digest(code);
    let found: KvRecord<CodeGrant | SpentCode> | undefined;
    const written = await this.codes.update(key, (current) => {
      found = current;
      const stored = current?.value;
      if (!stored) return undefined;
      if ("spent" in stored)
        return stored.grantId || stored.replayed ? undefined : { ...stored, replayed: true };
      return { spent: true, customerId: stored.customerId };
    });
    const stored = found?.value;
    if (!stored) return { ok: false, reused: false };
    if ("spent" in stored) {
      if (stored.grantId) await this.revokeGrant(stored.customerId, stored.grantId);
      return { ok: false, reused: true };
    }
    if (stored.expiresAt <= this.now() || !written) return { ok: false, reused: false };
    const spent = written as KvRecord<SpentCode> & { value: SpentCode };
    return { ok: true, code: stored, started: (grantId) => this.codeStarted(spent, grantId) };
  }

  private async codeStarted(
    spent: KvRecord<SpentCode> & { value: SpentCode },
    grantId: string,
  ): Promise<boolean> {
    const recorded = await this.codes.compareAndSet(spent.key, { ...spent.value, grantId }, spent.revision);
    if (recorded !== undefined) return true;
    // Only a replay changes a spent code: end what this exchange started.
    await this.revokeGrant(spent.value.customerId, grantId);
    return false;
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
    if ((await this.refreshTokens.create(digest(token), entry)) === undefined) {
      throw new Error("a refresh token was issued twice");
    }
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
    const stored = await this.refreshTokens.get(digest(token));
    const entry = stored?.value;
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
    if (
      (await this.refreshTokens.compareAndSet(stored.key, { ...entry, spent: true }, stored.revision)) ===
      undefined
    ) {
      return this.reused(entry); // spent by a racing request with the same token
    }
    return { ok: true, grant, scopes };
  }

  /** RFC 7009: a refresh token of `clientId` ends its grant; anything else changes nothing. */
  async revokeByRefreshToken(token: string, clientId: string): Promise<void> {
    const entry = (await this.refreshTokens.get(digest(token)))?.value;
    if (!entry || entry.clientId !== clientId) return;
    await this.revokeGrant(entry.customerId, entry.grantId);
  }

  /** The customer's live grants, oldest first. */
  async grantsOf(customerId: number): Promise<Grant[]> {
    const entry = await this.grants.get(grantsKey(customerId));
    const now = this.now();
    return (entry?.value ?? []).filter((grant) => grant.expiresAt > now);
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
    await this.grants.delete(grantsKey(customerId));
  }

  private async reused(entry: RefreshEntry): Promise<Redeemed> {
    await this.revokeGrant(entry.customerId, entry.grantId);
    return { ok: false, reused: true };
  }

  /** Compare-and-set on the customer's grants; expired ones are dropped on the way. */
  private async changeGrants(customerId: number, change: (grants: Grant[]) => Grant[]): Promise<void> {
    await this.grants.update(grantsKey(customerId), (current) => {
      const now = this.now();
      return change((current?.value ?? []).filter((grant) => grant.expiresAt > now));
    });
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}

const grantsKey = (customerId: number) => `cust.${customerId}`;

function digest(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}
