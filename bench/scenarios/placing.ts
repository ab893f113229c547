/**
 * Orders placed at a fixed rate (open loop: each at its time, answered or not) while webhook
 * registrations for `order.placed` receive them, each at a receiver of its own on this host; every
 * delivery is awaited. Shared by the order → webhook measurement (`orders.ts`, one registration)
 * and the deliveries-per-second one (`deliveries.ts`, ten).
 */
import { ms } from "../harness/compare.ts";
import { type NatsTraffic, trafficPerUnit } from "../harness/nats-traffic.ts";
import { percentiles } from "../harness/percentiles.ts";
import { type ReceiverThread, startReceiverThread } from "../harness/receiver-thread.ts";
import type { MeasuredRow, SystemClient } from "../harness/scenario.ts";
import { BENCH_API_KEY, type System, type TreeUsage } from "../harness/system.ts";
import { deliveryKey, type OrderTimes } from "./order-stages.ts";

/** A registration for `order.placed` and the receiver it points at. */
export interface Registration {
  webhookId: number;
  receiver: ReceiverThread;
  /** How many of the receiver's arrivals have been read (they are read once). */
  read: number;
}

/** Registers one more webhook for `order.placed`, at a receiver of its own on `system.receiverHost`. */
export async function register(system: System): Promise<Registration> {
  const receiver = await startReceiverThread(system.receiverHost);
  const registered = await fetch(`${system.rootUrl}/v2/webhooks`, {
    method: "POST",
    headers: { "x-api-key": BENCH_API_KEY, "content-type": "application/json" },
    body: JSON.stringify({ url: receiver.url("/orders"), events: ["order.placed"] }),
  });
  if (registered.status !== 201) {
    await receiver.close();
    throw new Error(`webhook not registered: ${registered.status} ${await registered.text()}`);
  }
  return { webhookId: ((await registered.json()) as { id: number }).id, receiver, read: 0 };
}

/** Cheeses to order (20, so that orders do not all wait on one cheese's stock). */
export async function orderableCheeses(client: SystemClient): Promise<number[]> {
  const cheeseIds: number[] = [];
  for (let n = 0; n < 20; n++) {
    const created = await client.fetch("/v2/cheeses", {
      body: { name: `Orderable ${n} ${Date.now()}`, pricePerKg: 20 + n },
    });
    if (created.status !== 201) throw new Error(`cheese not created: ${created.status}`);
    cheeseIds.push(((await created.json()) as { id: number }).id);
  }
  return cheeseIds;
}

export interface RateResult {
  /** Orders per second asked for. */
  rate: number;
  registrations: number;
  placed: number;
  failed: Record<string, number>;
  orderP50: number;
  orderP99: number;
  /** From the order's 201 to the delivery's arrival, over every delivery. */
  webhookP50: number;
  webhookP99: number;
  delivered: number;
  /** Deliveries of placed orders that had not arrived 30 s after the last order was placed. */
  missing: number;
  /** Deliveries per second: from the first order sent to the last delivery's arrival. */
  deliveredPerSecond: number;
  /** Per delivery (`deliveryKey`) that arrived: when its order was sent, answered, it arrived. */
  times: Map<string, OrderTimes>;
  /** CPU ms each process of the system spent from the first order to the last arrival. */
  cpuMs: Record<string, number>;
  /** The nats-servers' counters before the first order and after the last arrival (a cluster's). */
  nats?: { before: NatsTraffic; after: NatsTraffic };
}

/** CPU ms per process between two readings, largest first; processes below 0.5 ms left out. */
export function cpuBetween(before: TreeUsage, after: TreeUsage): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after.byProcess)
      .map(([name, usage]) => [name, usage.cpuMs - (before.byProcess[name]?.cpuMs ?? 0)] as const)
      .sort(([, a], [, b]) => b - a),
  );
}

export async function atRate(
  system: System,
  client: SystemClient,
  registrations: Registration[],
  cheeseIds: number[],
  rate: number,
  seconds: number,
): Promise<RateResult> {
  const count = Math.round(rate * seconds);
  const answered = new Map<string, { sentAt: number; answeredAt: number }>();
  const failed: Record<string, number> = {};
  const sends: Promise<void>[] = [];
  const natsBefore = await system.natsTraffic?.();
  const usageBefore = system.usage();
  const start = performance.now() + 50;
  const firstSentAt = Date.now() + 50;
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sends.push(
      (async () => {
        const sentAt = Date.now();
        try {
          const response = await client.fetch("/v2/store/order", {
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
  const expected = answered.size * registrations.length;
  const collect = () => {
    for (const registration of registrations) {
      const arrived = registration.receiver.arrivals();
      for (; registration.read < arrived.length; registration.read++) {
        const { orderId, receivedAt } = arrived[registration.read]!;
        const key = deliveryKey(orderId, registration.webhookId);
        if (answered.has(orderId) && !arrivals.has(key)) arrivals.set(key, receivedAt);
      }
    }
  };
  const deadline = Date.now() + 30_000;
  for (collect(); arrivals.size < expected && Date.now() < deadline; collect()) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const usageAfter = system.usage();
  const natsAfter = natsBefore && (await system.natsTraffic?.());
  const orderIdOf = (key: string) => key.slice(0, key.indexOf(" "));
  const orders = percentiles([...answered.values()].map((o) => o.answeredAt - o.sentAt));
  const webhooks = percentiles(
    [...arrivals.entries()].map(([key, at]) => at - answered.get(orderIdOf(key))!.answeredAt),
  );
  const lastArrival = Math.max(firstSentAt, ...arrivals.values());
  return {
    rate,
    registrations: registrations.length,
    placed: answered.size,
    failed,
    orderP50: orders(0.5),
    orderP99: orders(0.99),
    webhookP50: webhooks(0.5),
    webhookP99: webhooks(0.99),
    delivered: arrivals.size,
    missing: expected - arrivals.size,
    deliveredPerSecond: arrivals.size / ((lastArrival - firstSentAt) / 1000),
    times: new Map(
      [...arrivals].map(([key, receivedAt]) => [key, { ...answered.get(orderIdOf(key))!, receivedAt }]),
    ),
    cpuMs: cpuBetween(usageBefore, usageAfter),
    ...(natsBefore && natsAfter ? { nats: { before: natsBefore, after: natsAfter } } : {}),
  };
}

/** Every delivery arrived, at p99 under a second after its order's 201. */
export const withinASecond = (r: Pick<RateResult, "missing" | "webhookP99">) =>
  r.missing === 0 && r.webhookP99 < 1000;

/**
 * Of runs at rising rates, in the order run, the last one before the first that was not within a
 * second (undefined when the first was not).
 */
export function sustained<R extends Pick<RateResult, "missing" | "webhookP99">>(runs: R[]): R | undefined {
  let last: R | undefined;
  for (const run of runs) {
    if (!withinASecond(run)) break;
    last = run;
  }
  return last;
}

/** One run's row: the orders' and the deliveries' latencies, and what failed. */
export function rateRow(
  result: RateResult,
  target?: { webhookP99Ms: number; orderP99Ms?: number },
): MeasuredRow {
  const failures = Object.entries(result.failed).map(([status, n]) => `${status}×${n}`);
  if (result.missing) failures.push(`${result.missing} deliveries missing after 30 s`);
  const deliveries =
    result.registrations > 1
      ? `, ${result.rate * result.registrations} deliveries/s asked (${result.registrations} registrations), ${Math.round(result.deliveredPerSecond)}/s arrived`
      : "";
  return {
    name: `${result.rate} orders/s${deliveries} (${result.placed} placed${failures.length ? `; ${failures.join(", ")}` : ""})`,
    value: `order 201 p50 / p99 ${ms(result.orderP50)} / ${ms(result.orderP99)} ms; webhook after the 201 p50 / p99 ${ms(result.webhookP50)} / ${ms(result.webhookP99)} ms`,
    ...(target
      ? {
          target: `webhook p99 ≤ ${target.webhookP99Ms} ms${target.orderP99Ms === undefined ? "" : `, order 201 p99 ≤ ${target.orderP99Ms} ms`}`,
          met:
            result.missing === 0 &&
            result.webhookP99 <= target.webhookP99Ms &&
            (target.orderP99Ms === undefined || result.orderP99 <= target.orderP99Ms),
        }
      : {}),
  };
}

/** The nats-servers' messages per unit (order or delivery) of a cluster's run: a row; none on the single host. */
export function natsRows(what: string, result: Pick<RateResult, "nats">, units: number): MeasuredRow[] {
  if (!result.nats) return [];
  return [
    {
      name: `  NATS messages per ${what}`,
      value: trafficPerUnit(result.nats.before, result.nats.after, units),
    },
  ];
}

/** CPU per unit (order or delivery) per process, from a run's `cpuMs`: a row. */
export function cpuRow(what: string, cpuMs: Record<string, number>, units: number): MeasuredRow {
  const per = Object.entries(cpuMs)
    .map(([name, ms]) => [name, ms / units] as const)
    .filter(([, perUnit]) => perUnit >= 0.005);
  return {
    name: `  CPU per ${what}: ${per.reduce((sum, [, perUnit]) => sum + perUnit, 0).toFixed(2)} ms`,
    value: per.map(([name, perUnit]) => `${name} ${perUnit.toFixed(2)}`).join(", "),
  };
}
