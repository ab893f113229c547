import type { RouteConfig } from "@hono/zod-openapi";
import type { Caller, Scope } from "../env.ts";

/**
 * Who may call an operation, written next to its route (and published as its OpenAPI
 * `security`). Alternatives: any one of them lets the caller in.
 *  - `apiKey`: an `X-API-Key` (operator key, or a customer's personal key)
 *  - `bearer`: a customer's login JWT (`bearer_auth`)
 *  - `oauth`: a cheesy_oauth access token carrying all of these scopes; a customer's login JWT
 *    counts when its scopes include them (docs/identity.md "Access at the gateway")
 *  - `operatorSession`: an operator's console session token (`operator_session`), which no
 *    other rule admits
 * `callers` narrows any of them to these kinds of caller (fulfilment: client-credentials
 * clients only); others get 403.
 */
export type AccessRule =
  | { public: true }
  | { apiKey?: true; bearer?: true; oauth?: Scope[]; operatorSession?: true; callers?: Caller["kind"][] };

/** OpenAPI security requirements for a rule. */
export function securityOf(rule: AccessRule): RouteConfig["security"] {
  if ("public" in rule) return [];
  const requirements: NonNullable<RouteConfig["security"]> = [];
  if (rule.apiKey) requirements.push({ api_key: [] });
  if (rule.bearer) requirements.push({ bearer_auth: [] });
  if (rule.oauth) requirements.push({ cheesy_oauth: [...rule.oauth] });
  if (rule.operatorSession) requirements.push({ operator_session: [] });
  return requirements;
}
