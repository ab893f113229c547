import { isIP } from "node:net";
import { apiKeyHash, scopes } from "@cheese/contracts";
import { z } from "zod";
import type { Caller, Scope } from "../env.ts";

export const plans = ["free", "pro", "enterprise"] as const;
export type Plan = (typeof plans)[number];
export const allScopes: Scope[] = [...scopes];

/** The smaller of two plans (plans are listed smallest first). */
export function lowerPlan(a: Plan, b: Plan): Plan {
  return plans.indexOf(a) <= plans.indexOf(b) ? a : b;
}

export interface OperatorKey {
  /** Stable id for rate limiting and logs; never the key itself. */
  id: string;
  plan: Plan;
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
      if (colon === -1 || !key || !(plans as readonly string[]).includes(plan)) {
        ctx.addIssue({
          code: "custom",
          message: `entry ${colon === -1 ? "without a plan" : `with plan "${plan}"`}: each entry must be key:plan with plan free, pro or enterprise`,
        });
        return z.NEVER;
      }
      const hash = apiKeyHash(key);
      keys.set(hash, { id: `op:${hash.slice(0, 12)}`, plan: plan as Plan });
    }
    return keys;
  });

export function anonymousCaller(ip: string, plan: Plan): Caller {
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

/**
 * IPv4 callers are counted per address; IPv6 callers per /64, the block one subscriber gets, so
 * nobody holding a /64 has 2^64 fresh buckets.
 */
export function rateLimitedNetwork(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const expanded = expandIPv6(ip);
  return expanded ? `${expanded.slice(0, 4).join(":")}::/64` : ip;
}

function expandIPv6(ip: string): string[] | undefined {
  const [head = "", tail] = ip.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  if (right.some((part) => part.includes(".")) || left.some((part) => part.includes("."))) return undefined;
  const missing = 8 - left.length - right.length;
  if (missing < 0) return undefined;
  return [...left, ...Array(tail === undefined ? 0 : missing).fill("0"), ...right].map((p) =>
    Number.parseInt(p || "0", 16).toString(16),
  );
}
