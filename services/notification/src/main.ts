import {
  baseConfigSchema,
  isEntryPoint,
  runAsProcess,
  type ServiceDefinition,
  type StartOptions,
  startService,
} from "@cheese/service-kit";

const configSchema = baseConfigSchema;

/**
 * The notification service. Its domain arrives with its own issue; for now it runs, connects to its
 * stores and answers its health subject, so the system's topology is complete from day one.
 */
export const notificationService: ServiceDefinition<typeof configSchema._output> = {
  name: "notification",
  configSchema,
  needs: { eventStore: true, readModels: true },
  async start() {},
};

export const start = (options?: StartOptions) => startService(notificationService, options);

if (isEntryPoint(import.meta.url)) void runAsProcess(start);
