import { baseConfigShape } from "@cheese/service-kit";
import { z } from "zod";

export const gatewayConfigSchema = z.object({
  ...baseConfigShape,
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
});
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

/** The services behind the gateway; /readyz asks each one. */
export const backendServices = ["catalogue", "ordering", "customer", "notification"] as const;
