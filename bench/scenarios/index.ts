/**
 * Every scenario `pnpm bench` runs, in order, named for the data of `options` (--quick: less).
 * Add one here: an `HttpScenario` (compared with the bare Hono baseline, ABAB, on the system its
 * fixture starts) or a `Measurement` (runs on its own, returns rows). See ../harness/scenario.ts.
 * `--cluster` runs the same scenarios on the cluster, but for the single host's stores: the
 * 100,000 fixture, the projection rebuild and the memory the cheeses add.
 */
import type { BenchOptions, Scenario } from "../harness/scenario.ts";
import { cheeseScenarios } from "./cheeses.ts";
import { oneRegistration, webhookDeliveries } from "./deliveries.ts";
import { idleMemory } from "./memory.ts";
import { orderWebhooks } from "./orders.ts";
import { projectionRebuild } from "./rebuild.ts";

export const scenarios = (options: BenchOptions): Scenario[] => [
  ...cheeseScenarios(options),
  orderWebhooks,
  oneRegistration(options),
  webhookDeliveries,
  ...(options.system === "cluster" ? [] : [projectionRebuild, idleMemory]),
];

/**
 * Older stand-alone benchmarks: scripts that print their own lines, run after the scenarios in a
 * full run (not with --quick), each by name with --only.
 */
export const scripts: Record<string, () => Promise<unknown>> = {
  adapters: () => import("../adapters.ts"),
  "webhook-startup": () => import("../webhook-startup.ts"),
};
