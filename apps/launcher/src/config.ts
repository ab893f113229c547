import { baseConfigShape, loadConfig } from "@cheese/service-kit/launch";
import { z } from "zod";

export const serviceNames = ["catalogue", "ordering", "customer", "notification", "gateway"] as const;
export type ServiceName = (typeof serviceNames)[number];

export const launcherConfigSchema = z.object({
  ...baseConfigShape,
  GATEWAY_PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
  /** Processes per service in multi-process mode (2 to test scale-out). */
  REPLICAS: z.coerce.number().int().min(1).max(8).default(1),
  /** `auto`: separate processes when NATS is available; `single`: one process, in-process bus. */
  LAUNCH_MODE: z.enum(["auto", "single"]).default("auto"),
});
export type LauncherConfig = z.infer<typeof launcherConfigSchema>;

export function loadLauncherConfig(env: Record<string, string | undefined> = process.env): LauncherConfig {
  return loadConfig(launcherConfigSchema, env);
}
