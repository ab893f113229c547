import { runAsProcess } from "@cheese/service-kit";
import { serviceNames } from "./config.ts";
import { starters } from "./single-process.ts";

/**
 * Container entry point: runs the one service named by SERVICE as this process (the image is
 * shared by all services), and what `pnpm start` runs for each process: `node apps/launcher/dist/service.js`.
 */
const name = process.env.SERVICE;
if (!name || !(serviceNames as readonly string[]).includes(name)) {
  console.error(`invalid configuration:\n  SERVICE: must be one of ${serviceNames.join(", ")}`);
  process.exit(1);
}
const start = await starters[name as (typeof serviceNames)[number]]();
void runAsProcess(() => start());
