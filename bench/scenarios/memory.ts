/**
 * What the system holds at rest, and what its data adds: the whole process tree's RSS (nats-server
 * included), idle, on an empty DATA_DIR and on one with 100,000 cheeses (2,000 with --quick) in
 * the catalogue's store and nothing else, so the difference is the cheeses' alone. The cheeses are
 * written into the store, the system started once on them, left to settle (the outbox relay
 * publishes the history) and stopped; the reading is on the restart, as a running system holds
 * them (read models restored from their snapshots). In a full run the restart comes once the
 * history's events are older than `EVENTS`' duplicate window, as a system's at rest are: a
 * nats-server holds, and reads back on a restart, the ids of the events published within it
 * (docs/operations.md), which are the last minutes' traffic, not the data held.
 */
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_DUPLICATE_WINDOW_MS } from "@cheese/messaging";
import { writeCatalogueHistory } from "@cheese/service-testing/histories";
import { idleUsage, settle } from "../harness/compare.ts";
import {
  type BenchOptions,
  type MeasuredRow,
  type Measurement,
  measurementDir,
} from "../harness/scenario.ts";
import { startSystem, type TreeUsage } from "../harness/system.ts";

const MB = 1024 * 1024;
const mb = (bytes: number) => `${Math.round(bytes / MB)} MB`;
const perProcess = (usage: TreeUsage) =>
  Object.entries(usage.byProcess)
    .map(([name, { rss }]) => `${name} ${Math.round(rss / MB)}`)
    .join(", ");

/**
 * The system on `dataDir` once idle, its first start (when `restart`) settled and stopped before,
 * and, in a full run, restarted only once the duplicate window has passed since it settled.
 */
async function idleOn(dataDir: string, options: BenchOptions, restart: boolean): Promise<TreeUsage> {
  const start = () =>
    startSystem({ kind: options.system, dataDir, replicas: options.replicas, readyTimeoutMs: 900_000 });
  if (restart) {
    const first = await start();
    await settle(first, 900_000);
    const settled = performance.now();
    await first.stop();
    if (!options.quick)
      await sleep(Math.max(0, settled + DEFAULT_DUPLICATE_WINDOW_MS + 5_000 - performance.now()));
  }
  const system = await start();
  try {
    await settle(system);
    return await idleUsage(system.usage, options);
  } finally {
    await system.stop();
  }
}

export const idleMemory: Measurement = {
  kind: "measurement",
  name: "memory at rest, and what the cheeses add",
  async run(options: BenchOptions) {
    const root = measurementDir(options, "memory");
    try {
      const cheeses = options.quick ? 2_000 : 100_000;
      const empty = await idleOn(join(root.path, "empty"), options, false);
      const dataDir = join(root.path, "cheeses");
      await writeCatalogueHistory(dataDir, cheeses);
      const held = await idleOn(dataDir, options, true);
      const added = held.rss - empty.rss;
      const rows: MeasuredRow[] = [
        {
          name: "RSS idle, empty DATA_DIR",
          value: `${mb(empty.rss)} (${perProcess(empty)})`,
          ...(options.quick ? {} : { target: "≤ 400 MB", met: empty.rss <= 400 * MB }),
        },
        {
          name: `RSS idle, ${cheeses.toLocaleString("en-US")} cheeses (restart)`,
          value: `${mb(held.rss)} (${perProcess(held)})`,
        },
        {
          name: `RSS added by ${cheeses.toLocaleString("en-US")} cheeses`,
          value: mb(added),
          ...(options.quick ? {} : { target: "≤ 120 MB", met: added <= 120 * MB }),
        },
      ];
      return rows;
    } finally {
      root.remove();
    }
  },
};
