import type { BlockList } from "node:net";
import {
  apiKeyHash,
  type Credential,
  CUSTOMER_API_KEY_PREFIX,
  lowerPlan,
  type OAuthClient,
  type RatePlan,
} from "@cheese/contracts";
import type { CustomerDirectory } from "@cheese/customer/directory";
import type { KnownRevocations } from "@cheese/customer/known-revocations";
import { RemoteError } from "@cheese/messaging";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context, MiddlewareHandler, Next } from "hono";
import type { Caller, GatewayEnv, Scope } from "../env.ts";
import { clientAddress } from "./client-address.ts";
import { allScopes, anonymousCaller, type OperatorKey, operatorCaller } from "./credentials.ts";
import type { TokenVerifier, VerifiedClaims } from "./tokens.ts";

export interface AuthenticationDeps {
  tokens: TokenVerifier;
  operatorKeys: Map<string, OperatorKey>;
  oauthClients: Map<string, OAuthClient>;
  anonymousPlan: RatePlan;
  /** Proxies whose X-Forwarded-For names the client (see client-address.ts). */
  trustedProxies?: BlockList;
}

/** Shared state behind customer credentials: revocations and the customer service. */
export interface CustomerIdentity {
  revocations: KnownRevocations;
  customers: CustomerDirectory;
}

/** Who is calling; no caller: the anonymous one (made only then: its address is looked up). */
type Identified = { caller?: Caller; problem?: string };

/**
 * What a verified token's requests share, worked out on its first request and kept as long as the
 * verifier keeps its claims (keyed by them): the revocation keys it is checked against on every
 * request, its scopes, and, for an operator's or a client's token, the caller (it depends only on
 * the gateway's configuration). A customer's is looked up on every request (its plan may change).
 */
interface TokenUse {
  credential: Credential;
  scopes: ReadonlySet<Scope>;
  /** An operator's or a client's token: who it is, the same on every request. */
  identified?: Identified;
}
const tokenUses = new WeakMap<VerifiedClaims, TokenUse>();

/** No credentials: the anonymous caller. */
const NOBODY: Identified = Object.freeze({});

/**
 * Works out who is calling, for every request: an API key (operator or customer), a bearer token,
 * or nobody (counted by client IP). Bad credentials do not stop the request here; they are
 * remembered and the route's access rule answers 401 (public routes ignore them).
 *
 * Not `async`: a caller known at once (a token verified before, its revocations known, an
 * operator's key) passes on to `next()` without a promise of its own; only what has to be asked
 * (a customer's key or caller, a token not verified yet, a revocation not confirmed) waits.
 */
export function authenticate(
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): MiddlewareHandler<GatewayEnv> {
  const authenticated: MiddlewareHandler<GatewayEnv> = (c, next) => {
    const found = identify(c, deps, identity);
    if (found instanceof Promise) return found.then((result) => proceed(c, result, deps, next));
    return proceed(c, found, deps, next);
  };
  return authenticated;
}

function proceed(
  c: Context<GatewayEnv>,
  result: Identified,
  deps: AuthenticationDeps,
  next: Next,
): Promise<void> {
  c.set("caller", result.caller ?? anonymousCaller(clientIp(c, deps.trustedProxies), deps.anonymousPlan));
  if (result.problem) c.set("authProblem", result.problem);
  return next();
}

function identify(
  c: Context<GatewayEnv>,
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): Identified | Promise<Identified> {
  const apiKey = c.req.header("x-api-key");
  if (apiKey !== undefined) return identifyApiKey(c, apiKey, deps, identity);
  const authorization = c.req.header("authorization");
  if (authorization === undefined) return NOBODY;
  const match = BEARER.exec(authorization);
  if (!match) return { problem: "Authorization must be 'Bearer <token>'" };
  const known = deps.tokens.known(match[1]!);
  return known ? identifyClaims(c, known, deps, identity) : verifyThenIdentify(c, match[1]!, deps, identity);
}

async function verifyThenIdentify(
  c: Context<GatewayEnv>,
  token: string,
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): Promise<Identified> {
  let claims: VerifiedClaims;
  try {
    claims = await deps.tokens.verify(token);
  } catch (error) {
    if (error instanceof RemoteError) throw error; // the keys cannot be fetched: 503
    return { problem: tokenProblem(error) };
  }
  return identifyClaims(c, claims, deps, identity);
}

function identifyClaims(
  c: Context<GatewayEnv>,
  claims: VerifiedClaims,
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): Identified | Promise<Identified> {
  let use = tokenUses.get(claims);
  if (!use) {
    use = tokenUseOf(claims, deps);
    tokenUses.set(claims, use);
  }
  const revoked = identity.revocations.isRevoked(use.credential);
  if (revoked instanceof Promise) {
    const used = use;
    return revoked.then((yes) => identifyUse(c, claims, used, yes, deps, identity));
  }
  return identifyUse(c, claims, use, revoked, deps, identity);
}

function identifyUse(
  c: Context<GatewayEnv>,
  claims: VerifiedClaims,
  use: TokenUse,
  revoked: boolean,
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): Identified | Promise<Identified> {
  if (revoked) return { problem: "token revoked" };
  return use.identified ?? identifyToken(c, claims, use, deps, identity);
}

const BEARER = /^Bearer\s+(\S+)$/i;

function tokenUseOf(claims: VerifiedClaims, deps: AuthenticationDeps): TokenUse {
  const credential: Credential = {
    jti: claims.jti,
    ...(claims.kind === "session" || claims.kind === "user" ? { customerId: claims.sub } : {}),
    ...(claims.passwordVersion !== undefined ? { passwordVersion: claims.passwordVersion } : {}),
    ...(claims.grantId !== undefined ? { grantId: claims.grantId } : {}),
  };
  const scopes = new Set(claims.scopes.filter((s) => allScopes.includes(s)));
  const token = { jti: claims.jti, exp: claims.exp };
  const use: TokenUse = { credential, scopes };
  if (claims.kind === "operator") {
    // An operator's console session: the operator's key and plan while the key is configured.
    const operator = [...deps.operatorKeys.values()].find((key) => key.id === claims.sub);
    if (operator) use.identified = { caller: operatorCaller(operator, "operator_session", token) };
  } else if (claims.kind === "client") {
    const client = deps.oauthClients.get(claims.sub);
    if (client) {
      const caller: Caller = {
        kind: "client",
        id: `client:${client.id}`,
        plan: client.plan,
        scopes,
        via: "oauth",
        token,
      };
      use.identified = { caller };
    }
  }
  return use;
}

/**
 * What a 401 says about a bearer token that failed verification: a fixed sentence per case, never
 * the JWT library's own message (which names its checks and their values).
 */
export function tokenProblem(error: unknown): string {
  switch ((error as { code?: string }).code) {
    case "ERR_JWT_EXPIRED":
      return "token expired: get a new one";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "token signature is not valid: it was not issued by this server, or was altered";
    case "ERR_JOSE_ALG_NOT_ALLOWED":
    case "ERR_JOSE_NOT_SUPPORTED":
      return "token is not signed the way this server signs tokens (EdDSA)";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return "token was not issued for this server, or is not valid yet";
    case "ERR_JWKS_NO_MATCHING_KEY":
      return "token is signed with a key this server does not know";
    default:
      return "token is not a valid access token of this server";
  }
}

function identifyApiKey(
  c: Context<GatewayEnv>,
  apiKey: string,
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): Identified | Promise<Identified> {
  const operator = deps.operatorKeys.get(apiKeyHash(apiKey));
  if (operator) {
    return { caller: operatorCaller(operator, "api_key") };
  }
  if (!apiKey.startsWith(CUSTOMER_API_KEY_PREFIX)) return { problem: "unknown API key" };
  return identifyCustomerKey(c, apiKey, identity);
}

async function identifyCustomerKey(
  c: Context<GatewayEnv>,
  apiKey: string,
  identity: CustomerIdentity,
): Promise<Identified> {
  const owner = await identity.customers.keyOwner(apiKey, c.get("request"));
  if (!owner) return { problem: "unknown, revoked or expired API key" };
  const revoked = await identity.revocations.isRevoked({ keyId: owner.keyId, customerId: owner.customerId });
  if (revoked) return { problem: "API key revoked" };
  // A customer's keys spend the customer's own bucket, shared with its sessions: more keys are
  // not more requests.
  return {
    caller: {
      kind: "customer",
      id: customerBucket(owner.customerId),
      plan: owner.plan,
      scopes: new Set(),
      customer: { id: String(owner.customerId), username: owner.username },
      via: "api_key",
    },
  };
}

/** The rate-limit bucket of a customer: its sessions and all its API keys. */
const customerBucket = (customerId: number | string) => `cust:${customerId}`;

/**
 * Operator session tokens act for the operator key they were issued for, on its bucket and plan;
 * client tokens act for the client, on its bucket and plan; session tokens for the customer
 * (bearer_auth) on the customer's; user tokens (authorization code, implicit) for the customer
 * through a client, on a bucket of that pair and the lower of the two plans, so a customer
 * neither borrows a client's larger plan nor spends what other customers of the client have.
 */
async function identifyToken(
  c: Context<GatewayEnv>,
  claims: VerifiedClaims,
  { scopes }: TokenUse,
  deps: AuthenticationDeps,
  identity: CustomerIdentity,
): Promise<Identified> {
  if (claims.kind === "operator") return { problem: "token of an operator key no longer configured" };
  if (claims.kind === "client") return { problem: "token of an unknown client" };
  const principal = await identity.customers.principal(Number(claims.sub), c.get("request"));
  if (!principal) return { problem: "the customer no longer exists" };
  const caller: Caller = {
    kind: "customer",
    id: customerBucket(claims.sub),
    plan: principal.plan,
    scopes,
    customer: { id: claims.sub, username: principal.username || (claims.username ?? "") },
    via: "bearer",
    token: { jti: claims.jti, exp: claims.exp },
  };
  if (claims.kind === "session") return { caller };
  const client = claims.clientId ? deps.oauthClients.get(claims.clientId) : undefined;
  if (!client) return { problem: "token of an unknown client" };
  const plan = lowerPlan(client.plan, principal.plan);
  return { caller: { ...caller, id: `client:${client.id}:${caller.id}`, plan, via: "oauth" } };
}

function clientIp(c: Context<GatewayEnv>, trustedProxies: BlockList | undefined): string {
  let peer: string | undefined;
  try {
    peer = getConnInfo(c).remote.address;
  } catch {
    // no socket (in-process requests)
  }
  if (!peer) return "unknown";
  return trustedProxies ? clientAddress(peer, c.req.header("x-forwarded-for"), trustedProxies) : peer;
}
