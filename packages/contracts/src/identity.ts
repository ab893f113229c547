import { randomUUID } from "node:crypto";
import { defineRpc, jsonCodec } from "@cheese/messaging";
import { z } from "@hono/zod-openapi";
import type { CryptoKey, KeyObject } from "jose";
import { ratePlans, scopes, type TokenScope } from "./config.ts";
import { UsernameParam } from "./customer.ts";
import { dateTime } from "./fields.ts";

/**
 * What the identity part of the customer service (the OAuth 2.0 authorization server and the
 * issuer of session tokens) shares with the gateway, which verifies its tokens and checks its
 * revocations (docs/identity.md).
 */

/**
 * What a token stands for:
 *  - `session`: a customer's login (bearer_auth), 24 h
 *  - `user`: an OAuth token a customer granted to a client (authorization code / implicit)
 *  - `client`: an OAuth client acting for itself (client_credentials)
 *  - `operator`: an operator's console session (POST /v2/operator/sessions), good only to check
 *    and end itself
 */
export type TokenKind = "session" | "user" | "client" | "operator";

export interface TokenClaims {
  kind: TokenKind;
  /** Customer id for session/user tokens, client id for client tokens, operator id (`op:…`) for operator tokens. */
  sub: string;
  scopes: TokenScope[];
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

/** The JWT payload of a token's claims (besides iss, sub, jti, iat, exp, set by the signer). */
function tokenPayload(claims: Omit<TokenClaims, "jti" | "iat" | "exp" | "sub">): Record<string, unknown> {
  const payload: Record<string, unknown> = { kind: claims.kind, scope: claims.scopes.join(" ") };
  if (claims.username) payload.username = claims.username;
  if (claims.clientId) payload.client_id = claims.clientId;
  if (claims.passwordVersion !== undefined) payload.pwv = claims.passwordVersion;
  if (claims.grantId) payload.gid = claims.grantId;
  return payload;
}

/**
 * A token as the authorization server signs it: EdDSA with the key named `kid`, for `issuer`,
 * issued at `now` (whole seconds) and expiring `ttlSeconds` later, with a fresh `jti`.
 */
export async function signToken(
  claims: Omit<TokenClaims, "jti" | "iat" | "exp">,
  key: { kid: string; privateKey: CryptoKey | KeyObject | Uint8Array },
  issuer: string,
  now: Date,
  ttlSeconds: number,
): Promise<{ token: string; jti: string; expiresAt: Date }> {
  // Imported here: only the authorization server signs, and every process loads the contracts.
  const { SignJWT } = await import("jose");
  const jti = randomUUID();
  const issuedAt = Math.floor(now.getTime() / 1000);
  const expiresAt = new Date((issuedAt + ttlSeconds) * 1000);
  const token = await new SignJWT(tokenPayload(claims))
    .setProtectedHeader({ alg: "EdDSA", kid: key.kid, typ: "JWT" })
    .setIssuer(issuer)
    .setSubject(claims.sub)
    .setJti(jti)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .sign(key.privateKey);
  return { token, jti, expiresAt };
}

/** A verified JWT payload's claims; throws when it is not a token of ours. */
export function tokenClaims(payload: Record<string, unknown>): TokenClaims {
  const kind = payload.kind;
  if (kind !== "session" && kind !== "user" && kind !== "client" && kind !== "operator") {
    throw new Error("unknown token kind");
  }
  const { sub, jti, exp, iat } = payload;
  if (typeof sub !== "string" || typeof jti !== "string" || typeof exp !== "number") {
    throw new Error("token lacks sub, jti or exp");
  }
  return {
    kind,
    sub,
    jti,
    iat: typeof iat === "number" ? iat : 0,
    exp,
    scopes: String(payload.scope ?? "")
      .split(" ")
      .filter(Boolean) as TokenScope[],
    ...(typeof payload.username === "string" ? { username: payload.username } : {}),
    ...(typeof payload.client_id === "string" ? { clientId: payload.client_id } : {}),
    ...(kind === "session" || kind === "user"
      ? { passwordVersion: Number.isInteger(payload.pwv) ? (payload.pwv as number) : 0 }
      : {}),
    ...(typeof payload.gid === "string" ? { grantId: payload.gid } : {}),
  };
}

/**
 * Revocations: the NATS key-value bucket `revocations`, written by the customer service only and
 * watched by every gateway. What can be revoked: one token, one customer API key, one OAuth grant
 * (every token of it), or a customer's credentials.
 */
/** Broadcast by the customer service when a customer's status (and so plan) changes: `{customerId}`. */
export const PLAN_CHANGED = "broadcast.customer.plan_changed";

export const REVOCATIONS_BUCKET = "revocations";
/** Longer than any token lives (sessions: 24 h), so a revocation outlasts what it revokes. */
export const REVOCATION_TTL_MS = 25 * 3_600_000;

export const revocationKeys = {
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

/** The keys of the revocations that may apply to a credential. */
export function revocationKeysOf(credential: Credential): string[] {
  const keys: string[] = [];
  if (credential.jti !== undefined) keys.push(revocationKeys.token(credential.jti));
  if (credential.keyId !== undefined) keys.push(revocationKeys.apiKey(credential.keyId));
  if (credential.grantId !== undefined) keys.push(revocationKeys.grant(credential.grantId));
  if (credential.customerId !== undefined) keys.push(revocationKeys.customer(credential.customerId));
  return keys;
}

/**
 * A revocation as stored: until when it matters (epoch ms, the bucket forgets it after), and for
 * a customer's, which credentials it covers: all of them when `belowVersion` is absent
 * (erasure), or, after a password change, the tokens issued under a password version below
 * `belowVersion` except the session `keep` that made the change. Entries of older versions are
 * plain numbers: `until`.
 */
export interface RevocationEntry {
  until: number;
  belowVersion?: number;
  keep?: string;
}

/** Whether a stored revocation applies to the credential at `now` (epoch ms). */
export function revocationCovers(
  credential: Credential,
  entry: RevocationEntry | undefined,
  now: number,
): boolean {
  if (entry === undefined || entry.until <= now) return false;
  if (entry.belowVersion === undefined) return true;
  // A password change ends tokens of older versions; API keys are revoked one by one.
  if (credential.passwordVersion === undefined || credential.jti === entry.keep) return false;
  return credential.passwordVersion < entry.belowVersion;
}

/** Entries as stored; older versions stored plain numbers (`until`). Undefined: unreadable. */
export const revocationCodec = jsonCodec<RevocationEntry>((parsed) => {
  if (typeof parsed === "number" && Number.isFinite(parsed)) return { until: parsed };
  if (!parsed || typeof parsed !== "object" || typeof (parsed as RevocationEntry).until !== "number")
    return undefined;
  const { until, belowVersion, keep } = parsed as RevocationEntry;
  const entry: RevocationEntry = { until };
  if (typeof belowVersion === "number") entry.belowVersion = belowVersion;
  if (typeof keep === "string") entry.keep = keep;
  return entry;
});

export const OAuthGrant = z
  .object({
    id: z.string().openapi({ description: "the grant's id, for revoking it" }),
    clientId: z.string().openapi({ description: "the OAuth client it was given to" }),
    scopes: z.array(z.enum(scopes)),
    createdAt: dateTime.openapi({ description: "when the customer signed in and allowed it" }),
    lastUsedAt: dateTime.openapi({ description: "when a token of it was last issued" }),
    expiresAt: dateTime.openapi({ description: "when it ends unless the client refreshes it first" }),
  })
  .openapi("OAuthGrant", {
    description:
      "What a customer allowed an OAuth client: every access and refresh token issued from one sign-in.",
  });
export type OAuthGrant = z.infer<typeof OAuthGrant>;

const customerId = z.number().int().positive();

/** A public JWK of the signing key (Ed25519). */
const PublicJwk = z.object({ kty: z.string(), kid: z.string(), alg: z.string() }).catchall(z.unknown());

/**
 * An HTTP request to the authorization server, as the gateway received it on a public path
 * (`/oauth/...`, `/.well-known/...`), and the answer it sends back as it comes.
 */
/** A grant of the customer named in the path. */
export const GrantIdParam = UsernameParam.extend({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be a grant id")
    .openapi({ param: { name: "id", in: "path" } }),
});

export const ForwardedHttpRequest = z.object({
  method: z.string(),
  /** The path and query, e.g. `/oauth/authorize?client_id=spa`. */
  target: z.string(),
  /** The headers the server reads (content-type, accept, authorization). */
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  /** The origin clients reach the API at (PUBLIC_URL), and the issuer tokens name. */
  publicUrl: z.string(),
  issuer: z.string(),
});
export const ForwardedHttpResponse = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
});

export const identityRpc = {
  /** The public keys tokens are signed with (the gateway verifies against them). */
  jwks: defineRpc({
    subject: "customer.identity.jwks",
    request: z.object({}),
    response: z.object({ keys: z.array(PublicJwk) }),
  }),
  /** The authorization server's pages and endpoints, reached through the gateway. */
  http: defineRpc({
    subject: "customer.identity.http",
    request: ForwardedHttpRequest,
    response: ForwardedHttpResponse,
  }),
  /** Checks the password and starts a session: its token (bearer_auth), 24 h. 401 when wrong. */
  startSession: defineRpc({
    subject: "customer.session.login",
    request: z.object({ username: z.string(), password: z.string(), issuer: z.string() }),
    response: z.object({
      token: z.string(),
      expiresAt: z.string(),
      customerId,
      username: z.string(),
      plan: z.enum(ratePlans),
    }),
  }),
  /** Opens an operator's console session (the gateway checked the operator key): its token, 8 h. */
  startOperatorSession: defineRpc({
    subject: "customer.session.open_operator",
    request: z.object({ operatorId: z.string().min(1), issuer: z.string() }),
    response: z.object({ token: z.string(), expiresAt: z.string() }),
  }),
  /** Revokes one token (a session at logout, a console session) until it expires, on every gateway. */
  revokeToken: defineRpc({
    subject: "customer.session.revoke",
    request: z.object({ jti: z.string().min(1), until: z.number().int() }),
    response: z.object({}),
  }),
  /** The customer's live OAuth grants, oldest first. */
  listGrants: defineRpc({
    subject: "customer.grant.list",
    request: z.object({ customerId }),
    response: z.object({ grants: z.array(OAuthGrant) }),
  }),
  /** Ends a grant and every token of it; 404 when the customer has no such grant. */
  revokeGrant: defineRpc({
    subject: "customer.grant.revoke",
    request: z.object({ customerId, grantId: z.string() }),
    response: z.object({}),
  }),
};
