import type { ServiceName } from "./config.ts";

/**
 * The Node (V8) options each service's process runs with: under `pnpm start` the launcher passes
 * them on its command line; the container and the Kubernetes manifests set the same string as
 * NODE_OPTIONS of each service (deploy/; `pnpm check:deploy` fails when they differ).
 *
 * `--max-semi-space-size` (MB) bounds V8's young generation. Its default (16 MB, two semi-spaces)
 * is touched in full after a burst of allocations and stays resident, ~32 MB of every process.
 * A smaller one costs a scavenge more often; the values are measured (docs/performance.md,
 * "Memory"): the gateway allocates the most per request and keeps a larger one.
 */
export const serviceNodeOptions: Record<ServiceName, string> = {
  gateway: "--max-semi-space-size=8",
  catalogue: "--max-semi-space-size=4",
  ordering: "--max-semi-space-size=2",
  customer: "--max-semi-space-size=2",
  notification: "--max-semi-space-size=2",
};
