/**
 * Prints each service's V8 options, as `pnpm start` and the manifests give them, one
 * `<service> <options>` line per service: the container check (container.sh) reads them here
 * instead of from node-options.ts's text.
 */
import { serviceNodeOptions } from "../../apps/launcher/src/node-options.ts";

for (const [service, options] of Object.entries(serviceNodeOptions)) console.log(`${service} ${options}`);
