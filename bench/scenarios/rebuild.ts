/**
 * A projection rebuilt from a long history in the embedded stores: 1,000,000 catalogue events
 * (100,000 cheeses, each added and updated 9 times; 10,000 events with --quick) written into the
 * catalogue's SQLite store. Measured: the `cheeses` projection catching up into the in-memory read
 * models (events/s, CPU time); then the whole system on that DATA_DIR as a user meets it: its
 * first start (a rebuild, then a snapshot of the read models), a clean stop, and a restart
 * (the snapshot loaded, only the events after it applied), each timed to /readyz.
 */
import { join } from "node:path";
import { createSqliteEventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { createLogger, startProjection } from "@cheese/service-kit";
import { writeCatalogueHistory } from "@cheese/service-testing/histories";
import { cheesesProjection } from "../../services/catalogue/src/projections/cheeses.ts";
import {
  type BenchOptions,
  type MeasuredRow,
  type Measurement,
  measurementDir,
} from "../harness/scenario.ts";
import { startSystem } from "../harness/system.ts";

const number = (n: number) => Math.round(n).toLocaleString("en-US");
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export const projectionRebuild: Measurement = {
  kind: "measurement",
  name: "projection rebuild (embedded stores)",
  async run(options: BenchOptions) {
    const root = measurementDir(options, "rebuild");
    try {
      const dataDir = join(root.path, "data");
      const cheeses = options.quick ? 1_000 : 100_000;
      const writing = performance.now();
      const { events, file } = await writeCatalogueHistory(dataDir, cheeses, 10);
      const writtenMs = performance.now() - writing;

      const store = createSqliteEventStore({ file });
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const projection = await startProjection({
        ...cheesesProjection,
        eventStore: store,
        readModels: createMemoryReadModels(),
        logger: createLogger("bench", "silent"),
      });
      await projection.ready;
      const rebuildMs = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const rebuildCpuMs = (cpu.user + cpu.system) / 1000;
      await projection.close();
      await store.close();

      const first = await startSystem({
        kind: "single",
        dataDir,
        replicas: options.replicas,
        readyTimeoutMs: 900_000,
      });
      await first.stop();
      const restart = await startSystem({
        kind: "single",
        dataDir,
        replicas: options.replicas,
        readyTimeoutMs: 900_000,
      });
      await restart.stop();

      const rate = events / (rebuildMs / 1000);
      const rows: MeasuredRow[] = [
        {
          name: `history written (${number(events)} events, ${number(cheeses)} cheeses)`,
          value: seconds(writtenMs),
        },
        {
          name: "cheeses projection caught up",
          value: `${seconds(rebuildMs)}, ${number(rate)} events/s (${number(events / (rebuildCpuMs / 1000))} per CPU-second)`,
          ...(options.quick ? {} : { target: "≥ 100,000 events/s", met: rate >= 100_000 }),
        },
        {
          name: "whole system on that DATA_DIR, first start (rebuild): /readyz 200",
          value: seconds(first.readyMs),
        },
        {
          name: "whole system restarted (read models from their snapshot): /readyz 200",
          value: seconds(restart.readyMs),
          ...(options.quick ? {} : { target: "≤ 10 s", met: restart.readyMs <= 10_000 }),
        },
      ];
      return rows;
    } finally {
      root.remove();
    }
  },
};
