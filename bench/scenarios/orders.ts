/**
 * Order placement → `order.placed` webhook at a local receiver. Orders are placed at a fixed rate
 * (open loop: each at its time, answered or not), and every order's webhook is awaited; the
 * latency is from the order's 201 to the webhook's arrival. First at 100 orders/s, then at rising
 * rates until the webhooks' p99 passes a second: the rate the pipeline sustains. Before the
 * 100/s run, 3 s at that rate are placed and awaited unmeasured (the warm-up of every scenario);
 * the 100/s run is then broken down into CPU per order per process and per-stage times, read back
 * from the stores (`order-stages.ts`).
 */
import { join } from "node:path";
import { tempDir } from "@cheese/testing";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import { clientOf, ms } from "../harness/compare.ts";
import { percentiles } from "../harness/percentiles.ts";
import type { BenchOptions, MeasuredRow, Measurement, SystemClient } from "../harness/scenario.ts";
import { BENCH_API_KEY, startBenchSystem, treeUsage } from "../harness/system.ts";
import { type OrderTimes, stageRows } from "./order-stages.ts";

interface RateResult {
  rate: number;
  placed: number;
  failed: Record<string, number>;
  orderP50: number;
  orderP99: number;
  webhookP50: number;
  webhookP99: number;
  /** Placed orders whose webhook had not arrived 30 s after the last was placed. */
  missing: number;
  /** Per order id whose webhook arrived: when it was sent, answered, its webhook received. */
  times: Map<string, OrderTimes>;
}

async function atRate(
  system: SystemClient,
  receiver: Receiver,
  cheeseIds: number[],
  rate: number,
  seconds: number,
): Promise<RateResult> {
  const count = Math.round(rate * seconds);
  const answered = new Map<string, { sentAt: number; answeredAt: number }>();
  const failed: Record<string, number> = {};
  const sends: Promise<void>[] = [];
  const start = performance.now() + 50;
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sends.push(
      (async () => {
        const sentAt = Date.now();
        try {
          const response = await system.fetch("/v2/store/order", {
            body: {
              items: [{ cheeseId: cheeseIds[i % cheeseIds.length], quantity: 1 }],
              shippingAddress: { street: "1 Bench Lane", city: "Wells", country: "GB" },
            },
          });
          const body = (await response.json()) as { id?: number | string };
          if (response.status === 201) answered.set(String(body.id), { sentAt, answeredAt: Date.now() });
          else failed[response.status] = (failed[response.status] ?? 0) + 1;
        } catch {
          failed.errors = (failed.errors ?? 0) + 1;
        }
      })(),
    );
  }
  await Promise.all(sends);
  const arrivals = new Map<string, number>();
  const collect = () => {
    for (const request of receiver.requests("/orders")) {
      const envelope = envelopeOf(request);
      const orderId = String(envelope.data.order_id);
      if (answered.has(orderId) && !arrivals.has(orderId)) arrivals.set(orderId, request.receivedAt);
    }
  };
  const deadline = Date.now() + 30_000;
  for (collect(); arrivals.size < answered.size && Date.now() < deadline; collect()) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const orders = percentiles([...answered.values()].map((o) => o.answeredAt - o.sentAt));
  const webhooks = percentiles(
    [...arrivals.entries()].map(([orderId, at]) => at - answered.get(orderId)!.answeredAt),
  );
  return {
    rate,
    placed: answered.size,
    failed,
    orderP50: orders(0.5),
    orderP99: orders(0.99),
    webhookP50: webhooks(0.5),
    webhookP99: webhooks(0.99),
    missing: answered.size - arrivals.size,
    times: new Map(
      [...arrivals].map(([orderId, receivedAt]) => [orderId, { ...answered.get(orderId)!, receivedAt }]),
    ),
  };
}

function row(result: RateResult, target?: { p99Ms: number }): MeasuredRow {
  const failures = Object.entries(result.failed).map(([status, n]) => `${status}×${n}`);
  if (result.missing) failures.push(`${result.missing} webhooks missing after 30 s`);
  return {
    name: `${result.rate} orders/s (${result.placed} placed${failures.length ? `; ${failures.join(", ")}` : ""})`,
    value: `order 201 p50 / p99 ${ms(result.orderP50)} / ${ms(result.orderP99)} ms; webhook after the 201 p50 / p99 ${ms(result.webhookP50)} / ${ms(result.webhookP99)} ms`,
    ...(target
      ? {
          target: `webhook p99 ≤ ${target.p99Ms} ms`,
          met: result.missing === 0 && result.webhookP99 <= target.p99Ms,
        }
      : {}),
  };
}

export const orderWebhooks: Measurement = {
  kind: "measurement",
  name: "order placed → order.placed webhook",
  async run(options: BenchOptions) {
    const root = tempDir("bench-orders");
    const receiver = await Receiver.start();
    const system = await startBenchSystem({
      dataDir: join(root.path, "data"),
      replicas: options.replicas,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    });
    try {
      const client = await clientOf(system.rootUrl, system.dataDir);
      const registered = await fetch(`${system.rootUrl}/v2/webhooks`, {
        method: "POST",
        headers: { "x-api-key": BENCH_API_KEY, "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url("/orders"), events: ["order.placed"] }),
      });
      if (registered.status !== 201)
        throw new Error(`webhook not registered: ${registered.status} ${await registered.text()}`);
      const cheeseIds: number[] = [];
      for (let n = 0; n < 20; n++) {
        const created = await client.fetch("/v2/cheeses", {
          body: { name: `Orderable ${n} ${Date.now()}`, pricePerKg: 20 + n },
        });
        if (created.status !== 201) throw new Error(`cheese not created: ${created.status}`);
        cheeseIds.push(((await created.json()) as { id: number }).id);
      }
      const rows: MeasuredRow[] = [];
      const seconds = options.quick ? 2 : 10;
      const fixedRate = options.quick ? 20 : 100;
      // Warm-up at the measured rate, not reported (as the HTTP scenarios' 3 s): the first
      // seconds of a cold system (JIT, first connections) are not the pipeline's steady cost.
      await atRate(client, receiver, cheeseIds, fixedRate, options.quick ? 1 : 3);
      const before = treeUsage(system.launcherPid).byProcess;
      const fixed = await atRate(client, receiver, cheeseIds, fixedRate, seconds);
      const after = treeUsage(system.launcherPid).byProcess;
      if (fixed.placed === 0) throw new Error(`no order placed: ${JSON.stringify(fixed.failed)}`);
      rows.push(row(fixed, options.quick ? undefined : { p99Ms: 150 }));
      const cpu = Object.entries(after)
        .map(([name, usage]) => [name, (usage.cpuMs - (before[name]?.cpuMs ?? 0)) / fixed.placed] as const)
        .filter(([, perOrder]) => perOrder >= 0.005)
        .sort(([, a], [, b]) => b - a);
      rows.push({
        name: `  CPU per order, until its webhook arrived: ${cpu.reduce((sum, [, perOrder]) => sum + perOrder, 0).toFixed(2)} ms`,
        value: cpu.map(([name, perOrder]) => `${name} ${perOrder.toFixed(2)}`).join(", "),
      });
      rows.push(...stageRows(system.dataDir, fixed.times));
      if (!options.quick) {
        // Rising rates until the webhooks' p99 passes a second (or some never arrive).
        const within = (r: RateResult) => r.missing === 0 && r.webhookP99 < 1000;
        let sustained = 0;
        for (const rate of [50, 75, 100, 150, 200, 300, 400]) {
          const result = rate === 100 ? fixed : await atRate(client, receiver, cheeseIds, rate, seconds);
          if (rate !== 100) rows.push(row(result));
          if (!within(result)) break;
          sustained = rate;
        }
        rows.push({ name: "highest rate tried with webhook p99 < 1 s", value: `${sustained} orders/s` });
      }
      rows.push({
        name: "RSS of the whole system at the end",
        value: `${Math.round(treeUsage(system.launcherPid).rss / 1024 / 1024)} MB`,
      });
      return rows;
    } finally {
      await system.stop();
      await receiver.close();
      root.remove();
    }
  },
};
