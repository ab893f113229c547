import { identityRpc, type TokenClaims, type TokenScope, tokenClaims } from "@cheese/contracts";
import { callRpc, type MessageBus, RemoteError } from "@cheese/messaging";
import { type Clock, systemClock } from "@cheese/service-kit";
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey, jwtVerify } from "jose";

export type { TokenClaims } from "@cheese/contracts";

/** Claims as `verify` hands them out: one frozen object per token, shared by its requests. */
export type VerifiedClaims = Readonly<Omit<TokenClaims, "scopes">> & {
  readonly scopes: readonly TokenScope[];
};

const SIGNING_ALG = "EdDSA";
/** How many verified tokens `verify` remembers (the oldest is forgotten first). */
const VERIFIED_CACHE_SIZE = 10_000;
/** How many of a token's last characters key the verified tokens: 16 of its signature's (over 90 bits). */
const TAIL = 16;
const tailOf = (token: string): string => token.slice(-TAIL);
/** The least time between two fetches of the keys that a token with an unknown `kid` causes. */
const REFETCH_AFTER_MS = 10_000;

/**
 * Verifies the tokens the customer service issues (docs/identity.md), against the public keys it
 * publishes (`customer.identity.jwks`): fetched once, kept, and fetched again when a token names
 * a key not among them (a new signing key), at most every 10 s.
 */
export class TokenVerifier {
  private keySet: { select: JWTVerifyGetKey } | undefined;
  private fetching: Promise<void> | undefined;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  /**
   * Tokens whose signature, issuer and algorithm were verified, with their claims: checking an
   * EdDSA signature was a fifth of the gateway's CPU per request (docs/performance.md). A hit is
   * still refused once expired by this service's clock; revocation is checked by the caller on
   * every request, cached or not. The claims are frozen: every request with the token gets the
   * same object, which callers may key what they derive from it on.
   *
   * Kept by the token's last {@link TAIL} characters (its signature's), the whole token beside the
   * claims: a request's token is a new string each time, and a map keyed by it hashed all of its
   * ~700 characters on every request; comparing the whole token to the kept one costs less. Two
   * tokens ending alike (over 90 random bits: never seen) take turns in one place, each verified again.
   */
  private readonly verified = new Map<string, { token: string; claims: VerifiedClaims }>();

  constructor(
    private readonly bus: MessageBus,
    private readonly issuer: string,
    private readonly timeoutMs: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Verifies signature, issuer, expiry and algorithm (only EdDSA: `alg: none` and HMAC
   * confusion are refused). Throws on anything wrong; a 503 RemoteError when the keys cannot be
   * fetched.
   */
  async verify(token: string): Promise<VerifiedClaims> {
    const known = this.known(token);
    if (known) return known;
    const { payload } = await jwtVerify(token, (header, input) => this.key(header, input), {
      issuer: this.issuer,
      algorithms: [SIGNING_ALG],
      currentDate: this.clock.now(),
    });
    const claims = tokenClaims(payload);
    Object.freeze(claims.scopes);
    Object.freeze(claims);
    const tail = tailOf(token);
    if (!this.verified.has(tail) && this.verified.size >= VERIFIED_CACHE_SIZE) {
      this.verified.delete(this.verified.keys().next().value!);
    }
    this.verified.set(tail, { token, claims });
    return claims;
  }

  /** The claims of a token `verify` verified and remembers, while it has not expired; else undefined. */
  known(token: string): VerifiedClaims | undefined {
    const kept = this.verified.get(tailOf(token));
    if (kept === undefined || kept.token !== token) return undefined;
    return kept.claims.exp > this.clock.now().getTime() / 1000 ? kept.claims : undefined;
  }

  private async key(...args: Parameters<JWTVerifyGetKey>) {
    if (!this.keySet) await this.fetchKeys();
    try {
      return await this.keySet!.select(...args);
    } catch (error) {
      const unknownKey = (error as { code?: string }).code === "ERR_JWKS_NO_MATCHING_KEY";
      if (!unknownKey || this.clock.now().getTime() - this.fetchedAt < REFETCH_AFTER_MS) throw error;
      await this.fetchKeys();
      return this.keySet!.select(...args);
    }
  }

  /** One fetch at a time; a failure is a 503 and is tried again on the next token. */
  private fetchKeys(): Promise<void> {
    this.fetching ??= callRpc(this.bus, identityRpc.jwks, {}, { timeoutMs: this.timeoutMs })
      .then(({ keys }) => {
        const set = { keys: keys as JSONWebKeySet["keys"] };
        this.keySet = { select: createLocalJWKSet(set) };
        this.fetchedAt = this.clock.now().getTime();
      })
      .catch(() => {
        throw new RemoteError({
          status: 503,
          type: "service_unavailable",
          message: "tokens cannot be checked right now",
        });
      })
      .finally(() => {
        this.fetching = undefined;
      });
    return this.fetching;
  }
}
