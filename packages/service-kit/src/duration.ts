import { z } from "zod";

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `0`, `250ms`, `10s`, `5m`, `2h` into milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]);
  if (match[2] === undefined) return value === 0 ? 0 : undefined;
  return Math.round(value * (units[match[2]] ?? 1));
}

/** A zod schema for an environment variable holding a duration; yields milliseconds. */
export function duration(defaultValue: string) {
  return z
    .string()
    .default(defaultValue)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined) {
        ctx.addIssue({ code: "custom", message: `"${text}" is not a duration like 500ms, 10s, 5m or 2h` });
        return z.NEVER;
      }
      return ms;
    });
}
