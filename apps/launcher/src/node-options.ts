import type { ServiceName } from "./config.ts";

/**
 * The Node (V8) options each service's process runs with: under `pnpm start` the launcher passes
 * them on its command line; the container and the Kubernetes manifests set the same string as
 * NODE_OPTIONS of each service (deploy/; `pnpm check:deploy` fails when they differ).
 *
 * `--max-semi-space-size` (MB) bounds V8's young generation. Its default (16 MB, two semi-spaces)
 * is touched in full after a burst of allocations and stays resident, ~32 MB of every process.
 * A smaller one costs a scavenge more often; the values are measured (docs/performance.md,
 * "Memory"): the gateway allocates the most per request (~35 KB per get) and keeps a larger one
 * than V8's default: with 32 MB a get cost it 0.064–0.075 ms of CPU against 0.092–0.096 with 16
 * (alternating runs), for ~30 MB more under load and none at rest (docs/performance.md,
 * "Memory"). The catalogue (16 MB) and the services that take a create's events (ordering's
 * process, notification: 8 MB) spent a quarter of their busy time in scavenges with 4 and 2:
 * a create cost the catalogue 0.33 ms of CPU with 4 against 0.28 with 16, the process of
 * ordering, customer and notification 0.12–0.15 against 0.09, with the same RSS idle.
 *
 * `--max-old-space-size` only where the live set does not grow with the data: the gateway holds
 * no read model (~20 MB live). Below 256 MB V8 also grows the old generation by at most 1.3×
 * the live set between full collections instead of up to 4×, so the per-request garbage that
 * survives a scavenge under load is collected at ~30 MB rather than piling up to 100 MB and more.
 *
 * `--expose-gc` lets the process give its grown young generation back once idle (one scavenge
 * after a second without work: packages/service-kit/src/young-generation.ts); the maximum
 * above is what it may grow to under load, not what it holds at rest.
 *
 * Only options Node accepts in NODE_OPTIONS (`--optimize-for-size` is not: the customer's
 * container would not start); `pnpm check:deploy` runs Node with each string to be sure.
 */
export const serviceNodeOptions: Record<ServiceName, string> = {
  gateway: "--max-semi-space-size=32 --max-old-space-size=256 --expose-gc",
  catalogue: "--max-semi-space-size=16 --expose-gc",
  ordering: "--max-semi-space-size=8 --expose-gc",
  customer: "--max-semi-space-size=1 --expose-gc",
  notification: "--max-semi-space-size=8 --expose-gc",
};

/**
 * The launcher's own V8 options, which `pnpm start` starts it with (package.json's `start`;
 * `pnpm cluster` and the benchmark harness the same way): it holds no data and passes the
 * services' output on, yet V8's default young generation grew resident in full during start-up
 * (its new space 34 MB, 9 MB of it used; the launcher 102–108 MB RSS idle against 86 MB with
 * these). The supervisor does not pass them on to the services, which run with their own (above).
 */
export const launcherNodeOptions = "--max-semi-space-size=1";

/**
 * The options of a process of `pnpm start` running `services` (config.ts, `backendProcesses`):
 * those of the first; ordering's young generation serves ordering, customer and notification.
 */
export function processNodeOptions(services: readonly ServiceName[]): string {
  const [first] = services;
  if (!first) throw new Error("a process runs at least one service");
  return serviceNodeOptions[first];
}
