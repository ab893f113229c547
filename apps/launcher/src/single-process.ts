import { createInProcessBus } from "@cheese/messaging";
import { busOptions, createLogger, type RunningService, type StartOptions } from "@cheese/service-kit";
import type { ServiceName } from "./config.ts";
import { type LineWriter, lineDestination } from "./output.ts";

type Starter = (options?: StartOptions) => Promise<RunningService>;

/** Lazily imported so multi-process mode does not load every service into the launcher. */
export const starters: Record<ServiceName, () => Promise<Starter>> = {
  catalogue: async () => (await import("@cheese/catalogue")).start,
  ordering: async () => (await import("@cheese/ordering")).start,
  customer: async () => (await import("@cheese/customer")).start,
  notification: async () => (await import("@cheese/notification")).start,
  gateway: async () => withConsole((await import("@cheese/gateway")).start),
};

/**
 * A gateway with the operator console beside it (apps/console): the console listens on a
 * loopback port of the gateway's process and calls the gateway's API over HTTP; the gateway
 * forwards `/console` to it (`CONSOLE_URL`). They start and stop together.
 */
async function withConsole(startGateway: Starter): Promise<Starter> {
  const { startConsole } = await import("@cheese/console");
  return async (options = {}) => {
    const env = options.env ?? process.env;
    const log = options.logger?.child({ app: "console" });
    const consoleApp = await startConsole(env, log && { warn: (message) => log.warn(message) });
    try {
      const gateway = await startGateway({ ...options, env: { ...env, CONSOLE_URL: consoleApp.url } });
      return {
        ...gateway,
        async stop() {
          await gateway.stop();
          await consoleApp.stop();
        },
      };
    } catch (error) {
      await consoleApp.stop();
      throw error;
    }
  };
}

/**
 * The fallback when no NATS is available: every service in this process over one in-process
 * bus. Same code, same stores; only the transport differs.
 */
export async function runSingleProcess(
  services: readonly ServiceName[],
  env: Record<string, string | undefined>,
  logLevel: string,
  write: LineWriter,
  deadLetterAfterMs: number,
): Promise<{ stop(): Promise<void> }> {
  // On a terminal every service's lines go through the launcher's pretty printer; otherwise
  // straight to stdout, the JSON a log shipper reads.
  const logger = (name: string) =>
    createLogger(name, logLevel, process.stdout.isTTY ? lineDestination(name, write) : undefined);
  const bus = createInProcessBus({
    logger: logger("bus"),
    ...busOptions({ DEAD_LETTER_AFTER: deadLetterAfterMs }),
  });
  const running: RunningService[] = [];
  for (const name of services) {
    const start = await starters[name]();
    running.push(await start({ env, bus, logger: logger(name) }));
  }
  return {
    async stop() {
      for (const service of running.reverse()) await service.stop();
      await bus.close();
    },
  };
}
