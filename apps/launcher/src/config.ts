import { catalogueConfigSchema } from "@cheese/catalogue/config";
import { customerConfigSchema } from "@cheese/customer/config";
import { gatewayConfigSchema } from "@cheese/gateway/config";
import { notificationConfigSchema } from "@cheese/notification/config";
import { orderingConfigSchema } from "@cheese/ordering/config";
import { baseConfigShape, ConfigError, loadConfig, natsSeedProblem } from "@cheese/service-kit/launch";
import { z } from "zod";

export const serviceNames = ["catalogue", "ordering", "customer", "notification", "gateway"] as const;
export type ServiceName = (typeof serviceNames)[number];

export const launcherConfigSchema = z.object({
  ...baseConfigShape,
  GATEWAY_PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
  /** Processes per service in multi-process mode (2 to test scale-out). */
  REPLICAS: z.coerce.number().int().min(1).max(8).default(1),
  /**
   * `auto`: processes over NATS when NATS is available (the gateway, the catalogue, and the three
   * services off the hot path sharing one); `separate`: one process per service; `single`: one
   * process, in-process bus.
   */
  LAUNCH_MODE: z.enum(["auto", "separate", "single"]).default("auto"),
  /**
   * `local`: every process on this host; `netns`: each NATS node (three, clustered) and each
   * process in a network namespace of its own (hosts.ts; `pnpm cluster`), root only.
   */
  LAUNCH_HOSTS: z.enum(["local", "netns"]).default("local"),
  /** `true`: keep running when the process that started it goes (`pnpm cluster up` returns). */
  LAUNCH_DETACHED: z.enum(["true", "false"]).default("false"),
});
export type LauncherConfig = z.infer<typeof launcherConfigSchema>;

/** Each service's configuration schema, as the service itself checks it when it starts. */
const serviceConfigSchemas: Record<ServiceName, z.ZodType> = {
  catalogue: catalogueConfigSchema,
  ordering: orderingConfigSchema,
  customer: customerConfigSchema,
  notification: notificationConfigSchema,
  gateway: gatewayConfigSchema,
};

/**
 * The launcher's configuration, once every variable any process will read is checked: the
 * launcher's own and each service's, against that service's own schema. A bad one throws one
 * ConfigError naming each variable at fault once (`pnpm start` exits 78 with it, before anything
 * starts). Each service still checks its own when it starts (the image runs them without the
 * launcher); what the launcher adds for them (DATA_DIR resolved, PUBLIC_URL, development
 * credentials) is valid by construction.
 */
export function checkConfiguration(env: Record<string, string | undefined> = process.env): LauncherConfig {
  const lines = new Set<string>();
  let launcher: LauncherConfig | undefined;
  for (const schema of [launcherConfigSchema, ...Object.values(serviceConfigSchemas)]) {
    try {
      const config = loadConfig(schema as z.ZodObject, env);
      if (schema === launcherConfigSchema) launcher = config as LauncherConfig;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      for (const line of error.message.split("\n").slice(1)) lines.add(line);
    }
  }
  if (launcher)
    for (const line of natsCredentialsProblems(launcher)) lines.add(`  NATS_CREDENTIALS: ${line}`);
  if (lines.size > 0 || !launcher) throw new ConfigError(`invalid configuration:\n${[...lines].join("\n")}`);
  return launcher;
}

/**
 * NATS_CREDENTIALS goes with a NATS_URL of the operator's, and holds every service's identity
 * then; the launcher's own nats-servers use the identities it keeps under DATA_DIR.
 */
function natsCredentialsProblems(config: LauncherConfig): string[] {
  if (!config.NATS_CREDENTIALS) return [];
  if (!config.NATS_URL)
    return [
      "set without NATS_URL: the nats-server pnpm start runs lets in the identities it keeps in DATA_DIR/nats-identities",
    ];
  return serviceNames.flatMap((service) => natsSeedProblem(config.NATS_CREDENTIALS as string, service) ?? []);
}

/**
 * The backend processes of `pnpm start` (the gateway runs on its own, one per replica). Every
 * Node process costs ~70 MB before our code runs (the binary's pages, native memory, the heap of
 * the modules every service loads); ordering, customer and notification serve no read on the hot
 * path, so under `LAUNCH_MODE=auto` they share one process, each service still with its own NATS
 * connection, stores and health port, as in separate processes. A crash of one restarts the three.
 * Containers and Kubernetes run one service each.
 */
export function backendProcesses(mode: LauncherConfig["LAUNCH_MODE"]): ServiceName[][] {
  if (mode === "separate") return [["catalogue"], ["ordering"], ["customer"], ["notification"]];
  return [["catalogue"], ["ordering", "customer", "notification"]];
}

/**
 * The launcher's line saying how `pnpm start` lays the services out in processes, derived from
 * `backendProcesses` so it names the services that share a process as they are started.
 */
export function layoutMessage(mode: LauncherConfig["LAUNCH_MODE"]): string {
  const shared = backendProcesses(mode).filter((services) => services.length > 1);
  if (shared.length === 0) return "running each service as its own process over NATS";
  const groups = shared.map((services) => `${listed(services)} share one`);
  return `running the services as processes over NATS (${groups.join("; ")})`;
}

/** "a", "a and b", "a, b and c". */
function listed(names: readonly string[]): string {
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}
