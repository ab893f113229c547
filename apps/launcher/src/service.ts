import { runAsProcess } from "@cheese/service-kit";
import { type ServiceName, serviceNames } from "./config.ts";
import { starters } from "./single-process.ts";

/**
 * Container entry point: runs the service named by SERVICE as this process (the image is shared
 * by all services), and what `pnpm start` runs for each process: `node apps/launcher/dist/service.js`.
 * `pnpm start` may name several (comma separated, config.ts `backendProcesses`): each is started
 * as in a process of its own (its own NATS connection, stores and health port), all at once, and
 * they stop together, in reverse order.
 */
const names = (process.env.SERVICE ?? "").split(",").filter(Boolean);
if (names.length === 0 || names.some((name) => !(serviceNames as readonly string[]).includes(name))) {
  console.error(`invalid configuration:\n  SERVICE: must be one of ${serviceNames.join(", ")}`);
  process.exit(1);
}
const starts = await Promise.all(names.map((name) => starters[name as ServiceName]()));
void runAsProcess(async () => {
  // Started side by side: each waits mostly on its connection, stores and catch-up.
  const running = await Promise.all(starts.map((start) => start()));
  return {
    async stop() {
      for (const service of running.reverse()) await service.stop();
    },
  };
});
