import type { RatePlan } from "@cheese/contracts";
import type { Logger, RequestContext } from "@cheese/service-kit";

/**
 * The Hono context of every request: what middleware sets and handlers read. A leaf module: it
 * imports nothing of the gateway, so anything may import it.
 */

/** The spec's OAuth 2.0 scopes. */
export type Scope = "read:cheeses" | "write:cheeses" | "read:orders" | "write:orders";

/** The authenticated caller, set on the context by `authenticate` for every request. */
export interface Caller {
  kind: "anonymous" | "operator" | "customer" | "client";
  /**
   * Identity for rate limiting and idempotency keys: `op:<key id>`, `cust:<id>` (a customer's
   * sessions and API keys), `client:<id>:cust:<id>` (a customer's grant to a client),
   * `client:<id>` (client credentials), `ip:<addr>`.
   */
  id: string;
  plan: RatePlan;
  scopes: ReadonlySet<Scope>;
  /** Set when the caller acts as a customer (bearer, customer API key, or user OAuth token). */
  customer?: { id: string; username: string };
  /**
   * How the caller proved who it is; `operator_session`: an operator's console session token,
   * which only the operator session routes take.
   */
  via: "none" | "api_key" | "bearer" | "oauth" | "operator_session";
  /** The token presented, for logout (revokes its `jti` until `exp`, epoch seconds). */
  token?: { jti: string; exp: number };
}

/** Variables every request handler can read from the Hono context. */
export interface GatewayVariables {
  request: RequestContext;
  /** The request's logger: `requestId`, `correlationId` and `traceId` bound; made on first use. */
  log: () => Logger;
  /** Set by `authenticate` on every request. */
  caller: Caller;
  /** Why the credentials sent were refused, if they were; routes with an access rule answer 401. */
  authProblem?: string;
  /**
   * Set by `rateLimit` where limits apply: a request that counts as several (a batch of
   * registrations counts each element) takes `more` requests from the caller's bucket besides
   * its own; throws the refusal (429 with Retry-After, or 422 for more than the plan's burst at
   * once) when it cannot.
   */
  spend?: (more: number, what: string) => Promise<void>;
}

export interface GatewayEnv {
  Variables: GatewayVariables;
}
