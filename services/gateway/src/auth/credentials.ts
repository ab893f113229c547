import { apiKeyHash, type RatePlan, ratePlans, scopes } from "@cheese/contracts/config";
import { rateLimitedNetwork } from "@cheese/rate-limits/address";
import { z } from "zod";
import type { Caller, Scope } from "../env.ts";

export const allScopes: Scope[] = [...scopes];

export interface OperatorKey {
  /** Stable id for rate limiting and logs; never the key itself. */
  id: string;
  plan: RatePlan;
}

/** `API_KEYS`: `key:plan,key:plan`. Keys are kept only as SHA-256 hashes in memory. */
export const apiKeysSchema = z
  .string()
  .default("")
  .transform((text, ctx) => {
    const keys = new Map<string, OperatorKey>();
    for (const entry of text
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean)) {
      const colon = entry.lastIndexOf(":");
      const key = entry.slice(0, Math.max(colon, 0));
      const plan = entry.slice(colon + 1);
      if (colon === -1 || !key || !(ratePlans as readonly string[]).includes(plan)) {
        ctx.addIssue({
          code: "custom",
          message: `entry ${colon === -1 ? "without a plan" : `with plan "${plan}"`}: each entry must be key:plan with plan free, pro or enterprise`,
        });
        return z.NEVER;
      }
      const hash = apiKeyHash(key);
      keys.set(hash, { id: `op:${hash.slice(0, 12)}`, plan: plan as RatePlan });
    }
    return keys;
  });

export function anonymousCaller(ip: string, plan: RatePlan): Caller {
  return { kind: "anonymous", id: `ip:${rateLimitedNetwork(ip)}`, plan, scopes: new Set(), via: "none" };
}

/**
 * An operator key's caller, by its key (`api_key`) or by a console session issued for it
 * (`operator_session`, with the session's token): the key's bucket and plan either way.
 */
export function operatorCaller(
  operator: OperatorKey,
  via: "api_key" | "operator_session",
  token?: Caller["token"],
): Caller {
  return {
    kind: "operator",
    id: operator.id,
    plan: operator.plan,
    scopes: new Set(),
    via,
    ...(token ? { token } : {}),
  };
}
