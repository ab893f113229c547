import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Caller, GatewayEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import type { AccessRule } from "./access.ts";

const CHALLENGE = 'Bearer realm="cheese-store", ApiKey realm="cheese-store", header="X-API-Key"';

/**
 * Enforces a route's access rule on the caller `authenticate` found: 401 with WWW-Authenticate
 * for missing or bad credentials, 403 for valid credentials of the wrong kind or scope.
 */
export function authorize(rule: AccessRule) {
  // Not `async`: a caller let in passes on to `next()` without a promise of its own.
  return createMiddleware<GatewayEnv>((c, next) => {
    if ("public" in rule) return next();
    const problem = c.get("authProblem");
    const caller = c.get("caller");
    if (problem) return Promise.resolve(unauthorized(c, problem, true));
    if (caller.kind === "anonymous") return Promise.resolve(unauthorized(c, "credentials required", false));
    if (!allows(rule, caller)) {
      return Promise.resolve(errorResponse(c, 403, "these credentials do not grant this operation"));
    }
    return next();
  });
}

/** Any one alternative of the rule admits the caller. */
export function allows(rule: Exclude<AccessRule, { public: true }>, caller: Caller): boolean {
  if (rule.callers && !rule.callers.includes(caller.kind)) return false;
  if (rule.apiKey && caller.via === "api_key") return true;
  if (rule.bearer && caller.via === "bearer") return true;
  if (rule.operatorSession && caller.via === "operator_session") return true;
  if (rule.oauth && (caller.via === "oauth" || caller.via === "bearer")) {
    return rule.oauth.every((scope) => caller.scopes.has(scope));
  }
  return false;
}

function unauthorized(c: Context<GatewayEnv>, message: string, invalid: boolean): Response {
  c.header("WWW-Authenticate", invalid ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE);
  return errorResponse(c, 401, message);
}
