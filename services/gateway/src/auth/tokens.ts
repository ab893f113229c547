import { randomUUID } from "node:crypto";
import { type Clock, systemClock } from "@cheese/service-kit";
import { createLocalJWKSet, type JWTPayload, jwtVerify, SignJWT } from "jose";
import type { Scope } from "../env.ts";
import { SIGNING_ALG, type SigningKey } from "./signing-key.ts";

/**
 * What a token stands for:
 *  - `session`: a customer's login (bearer_auth), 24 h
 *  - `user`: an OAuth token a customer granted to a client (authorization code / implicit)
 *  - `client`: an OAuth client acting for itself (client_credentials)
 *  - `operator`: an operator's console session (POST /v2/operator/sessions), good only to check
 *    and end itself (routes/operator-sessions.ts)
 */
export type TokenKind = "session" | "user" | "client" | "operator";

export interface TokenClaims {
  kind: TokenKind;
  /** Customer id for session/user tokens, client id for client tokens, operator id (`op:…`) for operator tokens. */
  sub: string;
  scopes: Scope[];
  jti: string;
  /** Issued at and expires at, epoch seconds. */
  iat: number;
  exp: number;
  username?: string;
  clientId?: string;
  /**
   * Session and user tokens: the customer's password version when issued (`pwv`); a password
   * change revokes older ones. Tokens from before it was kept read as 0.
   */
  passwordVersion?: number;
  /** User tokens: the OAuth grant they belong to (`gid`), revoked with it. */
  grantId?: string;
}

export interface IssuedToken {
  token: string;
  jti: string;
  expiresAt: Date;
}

/** How many verified tokens `verify` remembers (the oldest is forgotten first). */
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenService {
  private readonly keySet;
  /**
   * Tokens whose signature, issuer and algorithm were verified, with their claims: checking an
   * EdDSA signature was a fifth of the gateway's CPU per request (docs/performance.md). A hit is
   * still refused once expired by this service's clock; revocation is checked by the caller on
   * every request, cached or not. The key never changes during a process's life.
   */
  private readonly verified = new Map<string, TokenClaims>();

  constructor(
    private readonly key: SigningKey,
    private readonly issuer: string,
    private readonly clock: Clock = systemClock,
  ) {
    this.keySet = createLocalJWKSet({ keys: [key.publicJwk] });
  }

  async issue(claims: Omit<TokenClaims, "jti" | "iat" | "exp">, ttlSeconds: number): Promise<IssuedToken> {
    const jti = randomUUID();
    const issuedAt = Math.floor(this.clock.now().getTime() / 1000);
    const expiresAt = new Date((issuedAt + ttlSeconds) * 1000);
    const payload: JWTPayload = { kind: claims.kind, scope: claims.scopes.join(" ") };
    if (claims.username) payload.username = claims.username;
    if (claims.clientId) payload.client_id = claims.clientId;
    if (claims.passwordVersion !== undefined) payload.pwv = claims.passwordVersion;
    if (claims.grantId) payload.gid = claims.grantId;
    const token = await new SignJWT(payload)
      .setProtectedHeader({ alg: SIGNING_ALG, kid: this.key.kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setSubject(claims.sub)
      .setJti(jti)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(this.key.privateKey);
    return { token, jti, expiresAt };
  }

  /**
   * Verifies signature, issuer, expiry and algorithm (only EdDSA: `alg: none` and HMAC
   * confusion are refused). Throws on anything wrong.
   */
  async verify(token: string): Promise<TokenClaims> {
    const known = this.verified.get(token);
    if (known && known.exp > this.clock.now().getTime() / 1000)
      return { ...known, scopes: [...known.scopes] };
    const claims = await this.verifySignature(token);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, claims);
    return { ...claims, scopes: [...claims.scopes] };
  }

  private async verifySignature(token: string): Promise<TokenClaims> {
    const { payload } = await jwtVerify(token, this.keySet, {
      issuer: this.issuer,
      algorithms: [SIGNING_ALG],
      currentDate: this.clock.now(),
    });
    const kind = payload.kind;
    if (kind !== "session" && kind !== "user" && kind !== "client" && kind !== "operator") {
      throw new Error("unknown token kind");
    }
    if (!payload.sub || !payload.jti || !payload.exp) throw new Error("token lacks sub, jti or exp");
    return {
      kind,
      sub: payload.sub,
      jti: payload.jti,
      iat: payload.iat ?? 0,
      exp: payload.exp,
      scopes: String(payload.scope ?? "")
        .split(" ")
        .filter(Boolean) as Scope[],
      ...(typeof payload.username === "string" ? { username: payload.username } : {}),
      ...(typeof payload.client_id === "string" ? { clientId: payload.client_id } : {}),
      ...(kind === "session" || kind === "user"
        ? { passwordVersion: Number.isInteger(payload.pwv) ? (payload.pwv as number) : 0 }
        : {}),
      ...(typeof payload.gid === "string" ? { grantId: payload.gid } : {}),
    };
  }

  jwks(): { keys: SigningKey["publicJwk"][] } {
    return { keys: [this.key.publicJwk] };
  }
}
