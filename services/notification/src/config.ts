import { baseConfigShape, duration, parseDuration } from "@cheese/service-kit/launch";
import { z } from "zod";

/** The spec's retry table: delays before attempts 1 to 6. */
export const DEFAULT_RETRY_DELAYS = "0,1m,5m,30m,2h,12h";

/** `WEBHOOK_RETRY_DELAYS`: comma-separated durations; their count is the number of attempts. */
const retryDelays = z
  .string()
  .default(DEFAULT_RETRY_DELAYS)
  .transform((text, ctx) => {
    const parts = (text.trim() === "" ? DEFAULT_RETRY_DELAYS : text).split(",").map((p) => p.trim());
    const delays = parts.map(parseDuration);
    if (delays.some((d) => d === undefined) || delays.length < 1 || delays.length > 20) {
      ctx.addIssue({
        code: "custom",
        message: `"${text}" must be 1 to 20 comma-separated durations like 0,1m,5m,30m,2h,12h`,
      });
      return z.NEVER;
    }
    return delays as number[];
  });

const flag = z
  .enum(["true", "false", ""])
  .default("false")
  .transform((v) => v === "true");

/** Base64 of 32 bytes; encrypts webhook secrets at rest. Unset: a key file under DATA_DIR. */
const secretsKey = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === "") return undefined;
    const key = Buffer.from(v, "base64");
    if (key.length !== 32) {
      ctx.addIssue({ code: "custom", message: "must be base64 of exactly 32 bytes" });
      return z.NEVER;
    }
    return key;
  });

export const notificationConfigSchema = z.object({
  ...baseConfigShape,
  WEBHOOK_RETRY_DELAYS: retryDelays,
  WEBHOOK_TIMEOUT: duration("10s").refine((ms) => ms > 0, "must be more than 0"),
  WEBHOOK_ALLOW_PRIVATE_URLS: flag,
  WEBHOOK_SECRETS_KEY: secretsKey,
  /**
   * Attempts in flight at once per registration and process: a slow receiver holds only these,
   * and a registration gets at most this many ÷ the time an attempt holds its slot, per second
   * (docs/webhooks.md, "Isolation").
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: z.coerce.number().int().min(1).max(1000).default(64),
  /** Attempts in flight at once per process, over all registrations. */
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(500),
  /** A registration whose attempts have all failed for this long is disabled (5 days). */
  WEBHOOK_DISABLE_AFTER: duration("120h").refine((ms) => ms > 0, "must be more than 0"),
  /** The most a receiver's `Retry-After` (on a 429 or 503) may defer a delivery's next attempt by. */
  WEBHOOK_RETRY_AFTER_MAX: duration("1h").refine((ms) => ms >= 0, "must not be negative"),
  /** Most deliveries one POST /webhooks/{id}/replay may start again. */
  WEBHOOK_REPLAY_MAX: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** How often each process saves a snapshot of its delivery schedule (if it changed). */
  WEBHOOK_SNAPSHOT_INTERVAL: duration("30s").refine((ms) => ms >= 1000, "must be at least 1s"),
  /**
   * How long after its publication an event of an ordered lane is first attempted: events of one
   * aggregate published closer together than this, and fanned out at once (by different replicas),
   * have all taken their places in the lane by then.
   */
  WEBHOOK_LANE_SETTLE: duration("1s").refine((ms) => ms >= 0 && ms <= 60_000, "must be 0 to 1m"),
});
export type NotificationConfig = z.infer<typeof notificationConfigSchema>;
