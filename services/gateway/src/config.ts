import { oauthClientsSchema, type RatePlan, ratePlans } from "@cheese/contracts/config";
import type { PlanLimits } from "@cheese/rate-limits";
import { planLimitsSchema } from "@cheese/rate-limits/plan-limits";
import { baseConfigShape, duration, optionalUrl } from "@cheese/service-kit/launch";
import { z } from "zod";
import { trustedProxiesSchema } from "./auth/client-address.ts";
import { apiKeysSchema } from "./auth/credentials.ts";
import { publicUrlSchema } from "./public-url.ts";

/** The spec's Limits table. */
export const specPlanLimits: Record<RatePlan, PlanLimits> = {
  free: { burst: 10, perHour: 100 },
  pro: { burst: 100, perHour: 10_000 },
  enterprise: { burst: 1000, perHour: "unlimited" },
};

export const gatewayConfigSchema = z
  .object({
    ...baseConfigShape,
    /** `production`: refuse to start without credentials (no development ones are ever made). */
    NODE_ENV: z.string().optional(),
    GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
    API_KEYS: apiKeysSchema,
    OAUTH_CLIENTS: oauthClientsSchema,
    ANON_PLAN: z.enum(ratePlans).default("free"),
    TRUSTED_PROXIES: trustedProxiesSchema,
    /** The origin clients reach the API at; unset: http://127.0.0.1:GATEWAY_PORT (public-url.ts). */
    PUBLIC_URL: publicUrlSchema,
    /** The operator console's address (apps/console), `/console` is forwarded to; unset: none. */
    CONSOLE_URL: optionalUrl,
    /** `iss` of every token; unset: PUBLIC_URL. */
    JWT_ISSUER: optionalUrl,
    /** Overrides of the rate plans, `plan=burst/perHour,...` (see docs/identity.md). */
    RATE_LIMIT_PLANS: planLimitsSchema(specPlanLimits),
    /**
     * `on`: catalogue reads are kept between the catalogue's change notices (`@cheese/catalogue/read-cache`);
     * `off` with a NATS cluster, where notices and replies may take different servers.
     */
    READ_CACHE: z.enum(["on", "off"]).default("on"),
    /** The most the read cache keeps, in MiB (least recently used replies go first). */
    READ_CACHE_MB: z.coerce.number().int().min(1).max(4096).default(64),
    /**
     * The longest a reply is answered from the read cache without asking the catalogue again: the
     * bound on a change whose notice was lost with a killed catalogue (`@cheese/catalogue/read-cache`).
     */
    READ_CACHE_MAX_AGE: duration("5s").pipe(z.number().min(1).max(3_600_000)),
  })
  .superRefine((config, ctx) => {
    if (config.NODE_ENV === "production" && config.API_KEYS.size === 0 && config.OAUTH_CLIENTS.size === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["API_KEYS"],
        message:
          "NODE_ENV=production and no credentials: set API_KEYS (operator keys) and/or OAUTH_CLIENTS " +
          "(OAuth clients); production never makes development credentials",
      });
    }
  });
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

/** The services behind the gateway; /readyz asks each one. */
export const backendServices = ["catalogue", "ordering", "customer", "notification"] as const;
