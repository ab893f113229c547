import { createHash, randomBytes } from "node:crypto";
import { type KeyValue, KvConflictError, type MessageBus } from "@cheese/messaging";
import type { Scope } from "../env.ts";

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
  expiresAt: number;
}

/** What a refresh token stands for. */
export interface RefreshGrant {
  clientId: string;
  customerId: number;
  scopes: Scope[];
  expiresAt: number;
}

/** Upper bound of a code's life (RFC 6749 recommends at most 10 minutes; decisions: 60 s). */
const CODE_BUCKET_TTL_MS = 60_000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3_600_000;

/**
 * Authorization codes and refresh tokens, kept in NATS key-value buckets so any gateway replica
 * can redeem what another issued. Only a hash of each is stored. Redeeming is compare-and-set on
 * the entry's revision: of two racing redemptions exactly one wins, and the entry is then gone.
 */
export class OAuthGrants {
  private codes: Promise<KeyValue> | undefined;
  private refreshTokens: Promise<KeyValue> | undefined;

  constructor(
    private readonly bus: MessageBus,
    private readonly codeTtlMs: number,
  ) {}

  async issueCode(grant: Omit<CodeGrant, "expiresAt">): Promise<string> {
    const code = randomBytes(32).toString("base64url");
    const kv = await this.codeBucket();
    await kv.create(digest(code), encode({ ...grant, expiresAt: Date.now() + this.codeTtlMs }));
    return code;
  }

  /** The grant, once; undefined for an unknown, used or expired code. */
  async redeemCode(code: string): Promise<CodeGrant | undefined> {
    const grant = await redeem<CodeGrant>(await this.codeBucket(), digest(code));
    return grant && grant.expiresAt > Date.now() ? grant : undefined;
  }

  async issueRefreshToken(grant: Omit<RefreshGrant, "expiresAt">): Promise<string> {
    const token = randomBytes(32).toString("base64url");
    const kv = await this.refreshBucket();
    await kv.create(digest(token), encode({ ...grant, expiresAt: Date.now() + REFRESH_TOKEN_TTL_MS }));
    return token;
  }

  /** The grant, once: a refresh token is replaced by a new one each time it is used. */
  /**
   * Spends a refresh token, but only once `check` accepts its grant: a refresh refused for a
   * reason that may pass (a narrower scope asked wrongly, the customer service not answering)
   * must not cost the client its only refresh token.
   */
  async redeemRefreshToken(
    token: string,
    check: (grant: RefreshGrant) => Promise<boolean> = async () => true,
  ): Promise<RefreshGrant | undefined> {
    const live = async (grant: RefreshGrant) => grant.expiresAt > Date.now() && check(grant);
    return redeem<RefreshGrant>(await this.refreshBucket(), digest(token), live);
  }

  /** Opened once; a failure (NATS away) is retried on the next request instead of remembered. */
  private codeBucket(): Promise<KeyValue> {
    if (!this.codes) {
      this.codes = this.bus.kv("oauth_codes", { ttlMs: CODE_BUCKET_TTL_MS });
      this.codes.catch(() => {
        this.codes = undefined;
      });
    }
    return this.codes;
  }

  private refreshBucket(): Promise<KeyValue> {
    if (!this.refreshTokens) {
      this.refreshTokens = this.bus.kv("oauth_refresh_tokens", { ttlMs: REFRESH_TOKEN_TTL_MS });
      this.refreshTokens.catch(() => {
        this.refreshTokens = undefined;
      });
    }
    return this.refreshTokens;
  }
}

const USED = new TextEncoder().encode("used");

async function redeem<T>(
  kv: KeyValue,
  key: string,
  /** Checks the grant before it is spent; a refusal leaves it usable. */
  check: (grant: T) => Promise<boolean> = async () => true,
): Promise<T | undefined> {
  const entry = await kv.get(key);
  if (!entry) return undefined;
  let grant: T;
  try {
    grant = JSON.parse(new TextDecoder().decode(entry.value)) as T;
  } catch {
    return undefined; // "used", or garbage
  }
  if (!(await check(grant))) return undefined;
  try {
    await kv.update(key, USED, entry.revision);
  } catch (error) {
    if (error instanceof KvConflictError) return undefined; // someone else redeemed it first
    throw error;
  }
  await kv.delete(key).catch(() => {});
  return grant;
}

function digest(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

function encode(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}
