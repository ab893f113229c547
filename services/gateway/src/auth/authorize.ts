import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import type { AccessRule, Caller } from "./access.ts";

/**
 * PROVISIONAL until identity and access (issue 3) lands: every caller is anonymous and every
 * rule passes. Issue 3 replaces this file with real authentication (API keys, JWT, OAuth).
 */
export function createAuthorizer(): (rule: AccessRule) => ReturnType<typeof createMiddleware<GatewayEnv>> {
  return (_rule) =>
    createMiddleware<GatewayEnv>(async (c, next) => {
      const caller: Caller = {
        kind: "anonymous",
        id: "ip:unknown",
        plan: "free",
        scopes: new Set(),
        via: "none",
      };
      c.set("caller", caller);
      await next();
    });
}
