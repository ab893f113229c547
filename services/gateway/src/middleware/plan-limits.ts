import { z } from "zod";
import { type Plan, plans } from "../auth/credentials.ts";
import type { PlanLimits } from "./token-bucket.ts";

/** The spec's Limits table. */
export const specPlanLimits: Record<Plan, PlanLimits> = {
  free: { burst: 10, perHour: 100 },
  pro: { burst: 100, perHour: 10_000 },
  enterprise: { burst: 1000, perHour: "unlimited" },
};

/**
 * `RATE_LIMIT_PLANS`: overrides of the plan table (docs/identity.md "Rate limits"), `plan=burst/perHour` comma separated, e.g.
 * `free=1000/unlimited` for a test system; plans not named keep their limits.
 */
export const ratePlansSchema = z
  .string()
  .default("")
  .transform((text, ctx) => {
    const table = { ...specPlanLimits };
    for (const entry of text
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean)) {
      const match = /^(\w+)=(\d+)\/(\d+|unlimited)$/.exec(entry);
      if (!match || !(plans as readonly string[]).includes(match[1]!) || Number(match[2]) < 1) {
        ctx.addIssue({
          code: "custom",
          message: `"${entry}" is not plan=burst/perHour (plan free, pro or enterprise; perHour a number or unlimited)`,
        });
        return z.NEVER;
      }
      table[match[1] as Plan] = {
        burst: Number(match[2]),
        perHour: match[3] === "unlimited" ? "unlimited" : Number(match[3]),
      };
    }
    return table;
  });
