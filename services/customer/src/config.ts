import { baseConfigShape, duration } from "@cheese/service-kit/launch";
import { z } from "zod";

export const customerConfigSchema = z.object({
  ...baseConfigShape,
  /** Lifetime of a new customer API key (90 days, docs/identity.md "API keys"). */
  API_KEY_LIFETIME: duration("2160h"),
  /** How long before expiry api_key.expiring goes out (7 days). */
  API_KEY_EXPIRY_WARNING: duration("168h"),
});
export type CustomerConfig = z.infer<typeof customerConfigSchema>;
