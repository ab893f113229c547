/**
 * Webhook deliveries per second, two measurements, each on a system of its own:
 *
 * 1. `oneRegistration`: one registration for `order.placed`, orders at a fixed 300/s (another
 *    with `--rate`; after 3 s at that rate, unmeasured): the order's 201 p99 and the webhook's
 *    p99 (201 → arrival), the CPU per order per process and each stage's p50 / p99
 *    (`order-stages.ts`).
 * 2. `webhookDeliveries`: ten registrations for `order.placed`, each at a receiver of its own on
 *    this host, so every order makes ten deliveries; orders placed at rising fixed rates (open
 *    loop) until the deliveries' p99 (the order's 201 → arrival) passes a second or some never
 *    arrive. Reported: the highest delivery rate within a second, the CPU per delivery per
 *    process there, and the stage that saturates first (`order-stages.ts`: the stage whose p99
 *    grew the most from the lowest rate to the first rate past the limit).
 *
 * Each run (warm-ups included) starts once the system is quiet (`settle`), so that what an
 * overloaded run left queued does not count against the next.
 *
 * `--quick`: 30 orders/s for 2 s with one registration, then 5 and 10 orders/s with ten.
 */
import { join } from "node:path";
import { clientOf, settle } from "../harness/compare.ts";
import { monotonicUs } from "../harness/profile.ts";
import {
  type BenchOptions,
  type MeasuredRow,
  type Measurement,
  measurementDir,
} from "../harness/scenario.ts";
import { startSystem } from "../harness/system.ts";
import { STAGES, saturatedStage, stageP99s, stageRows } from "./order-stages.ts";
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
  withinASecond,
} from "./placing.ts";

const REGISTRATIONS = 10;

/** Orders per second tried with ten registrations (ten deliveries each). */
const RATES = { full: [10, 20, 35, 50, 75, 100, 150], quick: [5, 10] };

/** A system for one measurement, and `at(rate)`: a run of orders once the system is quiet. */
async function deliveriesSystem(options: BenchOptions, name: string) {
  const root = measurementDir(options, name);
  const system = await startSystem({
    kind: options.system,
    dataDir: join(root.path, "data"),
    replicas: options.replicas,
    env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    ...(options.profile ? { nodeArgs: options.profile.nodeArgs } : {}),
  });
  const registrations: Registration[] = [];
  try {
    const client = await clientOf(system.rootUrl, system.dataDir);
    const cheeseIds = await orderableCheeses(client);
    const seconds = options.quick ? 2 : 10;
    // Each run starts on a quiet system: what an earlier run left queued is not this one's.
    const at = async (rate: number, duration = seconds, measured = true) => {
      await settle(system, 60_000);
      const startUs = monotonicUs();
      const result = await atRate(system, client, registrations, cheeseIds, rate, duration);
      // --profile: each measured rate is a window of its own (its placing and delivering).
      options.profile?.windows.push(
        ...(measured
          ? [
              {
                scenario: `${rate} orders/s, ${registrations.length} registration(s)`,
                startUs,
                endUs: monotonicUs(),
              },
            ]
          : []),
      );
      return result;
    };
    const stop = async () => {
      await system.stop();
      for (const registration of registrations) await registration.receiver.close();
      root.remove();
    };
    return { system, registrations, at, stop };
  } catch (error) {
    await system.stop();
    root.remove();
    throw error;
  }
}

/** The one-registration measurement's rate in a full run: the rate its targets are judged at. */
export const ONE_REGISTRATION_RATE = 300;

/**
 * Named for the rate it runs (`--rate`; `ONE_REGISTRATION_RATE` for 10 s in a full run, 30 orders/s
 * for 2 s with --quick). Its targets are judged at `ONE_REGISTRATION_RATE` in a full run only.
 */
export const oneRegistration = (named: Pick<BenchOptions, "quick" | "oneRegistrationRate">): Measurement => ({
  kind: "measurement",
  name:
    `one registration at ${named.oneRegistrationRate} orders/s` +
    (named.quick ? ` (--quick; ${ONE_REGISTRATION_RATE} in a full run)` : ""),
  async run(options: BenchOptions) {
    const { system, registrations, at, stop } = await deliveriesSystem(options, "bench-one-registration");
    try {
      registrations.push(await register(system));
      const rate = options.oneRegistrationRate;
      await at(rate, options.quick ? 1 : 3, false);
      const one = await at(rate);
      if (one.placed === 0) throw new Error(`no order placed: ${JSON.stringify(one.failed)}`);
      const judged = !options.quick && rate === ONE_REGISTRATION_RATE;
      return [
        rateRow(one, judged ? { webhookP99Ms: 150, orderP99Ms: 100 } : undefined),
        cpuRow("order, until its webhook arrived", one.cpuMs, one.placed),
        ...natsRows("order", one, one.placed),
        ...stageRows(system.dataDir, one.times),
      ];
    } finally {
      await stop();
    }
  },
});

export const webhookDeliveries: Measurement = {
  kind: "measurement",
  name: "webhook deliveries per second",
  async run(options: BenchOptions) {
    const { system, registrations, at, stop } = await deliveriesSystem(options, "bench-deliveries");
    try {
      const rows: MeasuredRow[] = [];
      while (registrations.length < REGISTRATIONS) registrations.push(await register(system));
      const rates = options.quick ? RATES.quick : RATES.full;
      await at(rates[0]!, options.quick ? 1 : 3, false);
      const runs: (RateResult & { stages: number[] | undefined })[] = [];
      for (const rate of rates) {
        const result = await at(rate);
        runs.push({ ...result, stages: stageP99s(system.dataDir, result.times) });
        // The second delivery target: 500 deliveries/s at p99 ≤ 150 ms.
        const at500 = !options.quick && rate * REGISTRATIONS === 500;
        rows.push(rateRow(result, at500 ? { webhookP99Ms: 150 } : undefined));
        // Per rate, so that two runs compare at the same rate (it falls as the rate rises).
        rows.push(cpuRow("delivery", result.cpuMs, result.delivered));
        rows.push(...natsRows("delivery", result, result.delivered));
        rows.push({
          name: "  stage p99s",
          value: runs.at(-1)!.stages
            ? STAGES.map((name, i) => `${name} ${Math.round(runs.at(-1)!.stages![i]!)}`).join(", ")
            : "none found in the stores",
        });
        if (!withinASecond(result)) break;
      }
      const best = sustained(runs);
      rows.push({
        name: `highest delivery rate with delivery p99 < 1 s (${REGISTRATIONS} registrations)`,
        value: best
          ? `${best.rate * REGISTRATIONS} deliveries/s asked (${best.rate} orders/s), all ${best.delivered} arrived (${Math.round(best.deliveredPerSecond)}/s from the first order to the last arrival); p99 ${Math.round(best.webhookP99)} ms`
          : `none: ${rates[0]! * REGISTRATIONS}/s already took longer`,
        ...(options.quick
          ? {}
          : { target: "≥ 1,000 deliveries/s", met: (best?.rate ?? 0) * REGISTRATIONS >= 1000 }),
      });
      if (best) rows.push(cpuRow("delivery there", best.cpuMs, best.delivered));
      const lowest = runs[0]!.stages;
      const limit = runs.find((run) => !withinASecond(run)) ?? runs.at(-1)!;
      if (runs.length > 1 && lowest && limit.stages) {
        rows.push({
          name: `stage that saturates first (its p99 grew the most from ${runs[0]!.rate} to ${limit.rate} orders/s)`,
          value: saturatedStage(lowest, limit.stages),
        });
      }
      rows.push({
        name: "RSS of the whole system at the end",
        value: `${Math.round(system.usage().rss / 1024 / 1024)} MB`,
      });
      return rows;
    } finally {
      await stop();
    }
  },
};
