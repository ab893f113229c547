import { createHash } from "node:crypto";
import { z } from "zod";

/**
 * What the services' configurations take from the contracts, importable without the rest of
 * them (`@cheese/contracts/config`): the launcher checks every service's configuration before it
 * starts any, and loads only this much of the contracts to do so.
 */

export const scopes = ["read:cheeses", "write:cheeses", "read:orders", "write:orders"] as const;
export type TokenScope = (typeof scopes)[number];

/** Rate plans (docs/identity.md "Rate limits"). */
export const ratePlans = ["free", "pro", "enterprise"] as const;
export type RatePlan = (typeof ratePlans)[number];

/**
 * What an API key is known by once issued: the hex SHA-256 of the key as presented. The customer
 * service stores a key only as this and the gateway asks for its owner by it
 * (`customer.api_key.authenticate`), so both sides must compute it here; the gateway keeps its
 * operator keys (`API_KEYS`) the same way.
 */
export function apiKeyHash(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** An OAuth client (`OAUTH_CLIENTS`): the gateway rates its tokens, the authorization server serves it. */
export const OAuthClient = z.object({
  id: z.string().min(1),
  /** Omitted: a public client, which must use PKCE. */
  secret: z.string().min(1).optional(),
  scopes: z.array(z.enum(scopes)).default([]),
  redirectUris: z.array(z.url()).default([]),
  plan: z.enum(ratePlans).default("free"),
});
export type OAuthClient = z.infer<typeof OAuthClient>;

/** `OAUTH_CLIENTS`: a JSON array of clients, by id. */
export const oauthClientsSchema = z
  .string()
  .default("[]")
  .transform((text, ctx) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text || "[]");
    } catch {
      ctx.addIssue({ code: "custom", message: "must be a JSON array of clients" });
      return z.NEVER;
    }
    const result = z.array(OAuthClient).safeParse(parsed);
    if (!result.success) {
      ctx.addIssue({
        code: "custom",
        message: result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
      });
      return z.NEVER;
    }
    return new Map(result.data.map((client) => [client.id, client]));
  });
