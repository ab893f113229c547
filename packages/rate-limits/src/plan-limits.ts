import { z } from "zod";
import type { PlanLimits } from "./token-bucket.ts";

/**
 * A plan table's overrides as configured (docs/identity.md "Rate limits"): `plan=burst/perHour`,
 * comma separated, e.g. `free=1000/unlimited` for a test system; plans not named keep their
 * limits in `defaults`, and only the plans `defaults` names are known.
 */
export function planLimitsSchema<P extends string>(defaults: Record<P, PlanLimits>) {
  const names = Object.keys(defaults) as P[];
  const known = names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${names.at(-1)}` : names.join("");
  return z
    .string()
    .default("")
    .transform((text, ctx) => {
      const table = { ...defaults };
      for (const entry of text
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean)) {
        const match = /^(\w+)=(\d+)\/(\d+|unlimited)$/.exec(entry);
        if (!match || !(names as string[]).includes(match[1]!) || Number(match[2]) < 1) {
          ctx.addIssue({
            code: "custom",
            message: `"${entry}" is not plan=burst/perHour (plan ${known}; perHour a number or unlimited)`,
          });
          return z.NEVER;
        }
        table[match[1] as P] = {
          burst: Number(match[2]),
          perHour: match[3] === "unlimited" ? "unlimited" : Number(match[3]),
        };
      }
      return table;
    });
}
