/**
 * Order placement → `order.placed` webhook at a local receiver. Orders are placed at a fixed rate
 * (open loop: each at its time, answered or not), and every order's webhook is awaited; the
 * latency is from the order's 201 to the webhook's arrival (`placing.ts`). First at 100 orders/s,
 * then at rising rates until the webhooks' p99 passes a second: the rate the pipeline sustains.
 * Before the 100/s run, 3 s at that rate are placed and awaited unmeasured (the warm-up of every
 * scenario); the 100/s run is then broken down into CPU per order per process and per-stage
 * times, read back from the stores (`order-stages.ts`).
 */
import { join } from "node:path";
import { clientOf } from "../harness/compare.ts";
import {
  type BenchOptions,
  type MeasuredRow,
  type Measurement,
  measurementDir,
} from "../harness/scenario.ts";
import { startSystem } from "../harness/system.ts";
import { stageRows } from "./order-stages.ts";
import {
  atRate,
  cpuRow,
  natsRows,
  orderableCheeses,
  type RateResult,
  type Registration,
  rateRow,
  register,
  sustained,
} from "./placing.ts";

export const orderWebhooks: Measurement = {
  kind: "measurement",
  name: "order placed → order.placed webhook",
  async run(options: BenchOptions) {
    const root = measurementDir(options, "orders");
    const system = await startSystem({
      kind: options.system,
      dataDir: join(root.path, "data"),
      replicas: options.replicas,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    });
    const registrations: Registration[] = [];
    try {
      const client = await clientOf(system.rootUrl, system.dataDir);
      registrations.push(await register(system));
      const cheeseIds = await orderableCheeses(client);
      const at = (rate: number, seconds: number) =>
        atRate(system, client, registrations, cheeseIds, rate, seconds);
      const rows: MeasuredRow[] = [];
      const seconds = options.quick ? 2 : 10;
      const fixedRate = options.quick ? 20 : 100;
      // Warm-up at the measured rate, not reported (as the HTTP scenarios' 3 s): the first
      // seconds of a cold system (JIT, first connections) are not the pipeline's steady cost.
      await at(fixedRate, options.quick ? 1 : 3);
      const fixed = await at(fixedRate, seconds);
      if (fixed.placed === 0) throw new Error(`no order placed: ${JSON.stringify(fixed.failed)}`);
      rows.push(rateRow(fixed, options.quick ? undefined : { webhookP99Ms: 150 }));
      rows.push(cpuRow("order, until its webhook arrived", fixed.cpuMs, fixed.placed));
      rows.push(...natsRows("order", fixed, fixed.placed));
      rows.push(...stageRows(system.dataDir, fixed.times));
      if (!options.quick) {
        // Rising rates until the webhooks' p99 passes a second (or some never arrive).
        const runs: RateResult[] = [];
        for (const rate of [50, 75, 100, 150, 200, 300, 400]) {
          const result = rate === fixedRate ? fixed : await at(rate, seconds);
          if (rate !== fixedRate) rows.push(rateRow(result));
          runs.push(result);
          if (sustained(runs) !== result) break;
        }
        rows.push({
          name: "highest rate tried with webhook p99 < 1 s",
          value: `${sustained(runs)?.rate ?? 0} orders/s`,
        });
      }
      rows.push({
        name: "RSS of the whole system at the end",
        value: `${Math.round(system.usage().rss / 1024 / 1024)} MB`,
      });
      return rows;
    } finally {
      await system.stop();
      for (const registration of registrations) await registration.receiver.close();
      root.remove();
    }
  },
};
