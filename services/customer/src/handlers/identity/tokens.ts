import { signToken, type TokenClaims, tokenClaims } from "@cheese/contracts";
import { type Clock, systemClock } from "@cheese/service-kit";
import { createLocalJWKSet, jwtVerify } from "jose";
import { SIGNING_ALG, type SigningKey } from "./signing-key.ts";

export interface IssuedToken {
  token: string;
  jti: string;
  expiresAt: Date;
}

/**
 * Issues every token of the system (sessions, OAuth access tokens) with the signing key, for the
 * issuer the gateway names (its PUBLIC_URL or JWT_ISSUER), and verifies its own (token revocation
 * at /oauth/revoke). The gateway verifies them against the published keys (`jwks`).
 */
export class TokenIssuer {
  private readonly keySet;

  constructor(
    private readonly key: SigningKey,
    private readonly clock: Clock = systemClock,
  ) {
    this.keySet = createLocalJWKSet({ keys: [key.publicJwk] });
  }

  issue(
    claims: Omit<TokenClaims, "jti" | "iat" | "exp">,
    ttlSeconds: number,
    issuer: string,
  ): Promise<IssuedToken> {
    return signToken(claims, this.key, issuer, this.clock.now(), ttlSeconds);
  }

  /** Verifies signature, issuer, expiry and algorithm (only EdDSA); throws on anything wrong. */
  async verify(token: string, issuer: string): Promise<TokenClaims> {
    const { payload } = await jwtVerify(token, this.keySet, {
      issuer,
      algorithms: [SIGNING_ALG],
      currentDate: this.clock.now(),
    });
    return tokenClaims(payload);
  }

  /** The JWK set published at /.well-known/jwks.json and to the gateways. */
  jwks(): { keys: ({ kty: string; kid: string; alg: string } & Record<string, unknown>)[] } {
    const { kty, ...rest } = this.key.publicJwk;
    return { keys: [{ ...rest, kty: kty!, kid: this.key.kid, alg: SIGNING_ALG }] };
  }
}
