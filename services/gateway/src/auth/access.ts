import type { RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../env.ts";

/** The spec's OAuth 2.0 scopes. */
export type Scope = "read:cheeses" | "write:cheeses" | "read:orders" | "write:orders";

/**
 * Who may call an operation, written next to its route (and published as its OpenAPI
 * `security`). Alternatives: any one of them lets the caller in.
 *  - `apiKey`: an `X-API-Key` (operator key, or a customer's personal key)
 *  - `bearer`: a customer's login JWT (`bearer_auth`)
 *  - `oauth`: a cheesy_oauth access token carrying all of these scopes; a customer's login JWT
 *    counts when its scopes include them (decisions.md "Authentication")
 */
export type AccessRule = { public: true } | { apiKey?: true; bearer?: true; oauth?: Scope[] };

/** The authenticated caller, set on the context by `authorize` for every request. */
export interface Caller {
  kind: "anonymous" | "operator" | "customer" | "client";
  /**
   * Identity for rate limiting and idempotency keys: `op:<key id>`, `key:<customer key id>`,
   * `cust:<id>`, `client:<id>`, `ip:<addr>`.
   */
  id: string;
  plan: "free" | "pro" | "enterprise";
  scopes: ReadonlySet<Scope>;
  /** Set when the caller acts as a customer (bearer, customer API key, or user OAuth token). */
  customer?: { id: string; username: string };
  /** How the caller proved who it is. */
  via: "none" | "api_key" | "bearer" | "oauth";
  /** The token presented, for logout (revokes its `jti` until `exp`, epoch seconds). */
  token?: { jti: string; exp: number };
}

/** OpenAPI security requirements for a rule. */
export function securityOf(rule: AccessRule): RouteConfig["security"] {
  if ("public" in rule) return [];
  const requirements: NonNullable<RouteConfig["security"]> = [];
  if (rule.apiKey) requirements.push({ api_key: [] });
  if (rule.bearer) requirements.push({ bearer_auth: [] });
  if (rule.oauth) requirements.push({ cheesy_oauth: [...rule.oauth] });
  return requirements;
}

/**
 * Attaches a rule to a route: its OpenAPI `security` and the middleware that enforces it
 * (401 with WWW-Authenticate without valid credentials, 403 without the scope).
 */
export function secured<R extends RouteConfig>(
  rule: AccessRule,
  enforce: (rule: AccessRule) => MiddlewareHandler<GatewayEnv>,
  route: R,
): R {
  return { ...route, security: securityOf(rule), middleware: [enforce(rule)] } as R;
}
