import { createPrivateKey } from "node:crypto";
import { oauthClientsSchema } from "@cheese/contracts/config";
import { baseConfigShape, duration } from "@cheese/service-kit/launch";
import { z } from "zod";

export const customerConfigSchema = z.object({
  ...baseConfigShape,
  /** Lifetime of a new customer API key (90 days, docs/identity.md "API keys"). */
  API_KEY_LIFETIME: duration("2160h"),
  /** How long before expiry api_key.expiring goes out (7 days). */
  API_KEY_EXPIRY_WARNING: duration("168h"),
  /** The OAuth clients the authorization server serves (the gateway reads the same list). */
  OAUTH_CLIENTS: oauthClientsSchema,
  /** A private Ed25519 JWK; unset: one is created under DATA_DIR/customer and kept. */
  JWT_PRIVATE_KEY: z
    .string()
    .optional()
    .transform((v) => (v === "" ? undefined : v))
    .refine((v) => v === undefined || isEd25519PrivateJwk(v), "must be the JSON of an Ed25519 private JWK"),
  /** Lifetime of an OAuth authorization code, at most 60 s (docs/identity.md). */
  OAUTH_CODE_TTL: duration("60s").pipe(z.number().min(1).max(60_000)),
});
export type CustomerConfig = z.infer<typeof customerConfigSchema>;

function isEd25519PrivateJwk(text: string): boolean {
  try {
    return createPrivateKey({ key: JSON.parse(text), format: "jwk" }).asymmetricKeyType === "ed25519";
  } catch {
    return false;
  }
}
