/**
 * Where an order's webhook spends its time, read back from the embedded stores after a run:
 * the ordering event's append, its publish (the bus's timestamp, carried as the webhook's
 * `created_at`), the fan-out's record, the delivery's creation, its first attempt's start, and
 * the receiver's arrival. Printed per stage (p50 / p99) and per second of the run (is the tail
 * the first seconds?).
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { ms } from "../harness/compare.ts";
import { percentiles } from "../harness/percentiles.ts";
import type { MeasuredRow } from "../harness/scenario.ts";

/** What the load generator knows of one order: when it was sent, answered, its webhook arrived. */
export interface OrderTimes {
  sentAt: number;
  answeredAt: number;
  receivedAt: number;
}

const STAGES = [
  "append→published",
  "published→recorded",
  "recorded→created",
  "created→started",
  "started→received",
];

type Row = [string, string, string];

const rows = (file: string, sql: string): Row[] => {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).raw().all() as Row[];
  } finally {
    db.close();
  }
};

/** Per order id: the five stages' durations (ms), from the stores of `dataDir`. */
function stagesOf(dataDir: string, orders: ReadonlyMap<string, OrderTimes>): Map<string, number[]> {
  const time = (iso: string) => Date.parse(iso);
  const appended = new Map<string, number>();
  for (const [stream, , at] of rows(
    join(dataDir, "ordering", "events.sqlite"),
    "SELECT stream, type, created_at FROM events WHERE type = 'OrderPlaced'",
  ))
    appended.set(stream.replace(/^order-/, ""), time(at));
  const notification = join(dataDir, "notification", "events.sqlite");
  /** event id → order id, publish time, record time */
  const recorded = new Map<string, { orderId: string; published: number; recorded: number }>();
  for (const [, data, at] of rows(
    notification,
    "SELECT stream, data, created_at FROM events WHERE category = 'webhookevent'",
  )) {
    const plan = JSON.parse(data) as { eventId: string; createdAt: string; body: string };
    const orderId = String((JSON.parse(plan.body) as { data: { order_id?: unknown } }).data.order_id);
    recorded.set(plan.eventId, { orderId, published: time(plan.createdAt), recorded: time(at) });
  }
  const byOrder = new Map<string, { created: number; started?: number }>();
  for (const [stream, typeAndData, at] of rows(
    notification,
    "SELECT stream, type || ' ' || data, created_at FROM events WHERE category = 'delivery' AND type IN ('DeliveryCreated', 'AttemptStarted') ORDER BY position",
  )) {
    if (typeAndData.startsWith("DeliveryCreated ")) {
      const facts = JSON.parse(typeAndData.slice("DeliveryCreated ".length)) as { eventId: string };
      const orderId = recorded.get(facts.eventId)?.orderId;
      if (!orderId) continue;
      byOrder.set(orderId, { created: time(at) });
      byOrder.set(stream, byOrder.get(orderId)!);
    } else {
      const delivery = byOrder.get(stream);
      if (delivery && delivery.started === undefined) delivery.started = time(at);
    }
  }
  const stages = new Map<string, number[]>();
  for (const { orderId, published, recorded: at } of recorded.values()) {
    const order = orders.get(orderId);
    const append = appended.get(orderId);
    const delivery = byOrder.get(orderId);
    if (!order || append === undefined || delivery?.started === undefined) continue;
    stages.set(orderId, [
      published - append,
      at - published,
      delivery.created - at,
      delivery.started - delivery.created,
      order.receivedAt - delivery.started,
    ]);
  }
  return stages;
}

/** Rows: each stage's p50 / p99, then per second of the run the webhook p50 / p99 and its largest stage at p99. */
export function stageRows(dataDir: string, orders: ReadonlyMap<string, OrderTimes>): MeasuredRow[] {
  const stages = stagesOf(dataDir, orders);
  if (stages.size === 0) return [{ name: "stages", value: "none found in the stores" }];
  const all = [...stages.values()];
  const result: MeasuredRow[] = STAGES.map((name, i) => {
    const at = percentiles(all.map((s) => s[i]!));
    return {
      name: `  stage ${name}`,
      value: `p50 / p99 ${ms(at(0.5))} / ${ms(at(0.99))} ms`,
    };
  });
  const start = Math.min(...[...orders.values()].map((o) => o.sentAt));
  const seconds = new Map<number, string[]>();
  for (const [orderId, order] of orders) {
    const second = Math.floor((order.sentAt - start) / 1000);
    seconds.set(second, [...(seconds.get(second) ?? []), orderId]);
  }
  for (const [second, ids] of [...seconds].sort(([a], [b]) => a - b)) {
    const latencies = ids.map((id) => orders.get(id)!.receivedAt - orders.get(id)!.answeredAt);
    const at = percentiles(latencies);
    const p99 = at(0.99);
    const tail = ids.filter(
      (id) => orders.get(id)!.receivedAt - orders.get(id)!.answeredAt >= p99 && stages.has(id),
    );
    const slowest = tail.map((id) => stages.get(id)!)[0];
    const largest = slowest ? slowest.indexOf(Math.max(...slowest)) : -1;
    result.push({
      name: `  second ${second + 1}`,
      value: `webhook p50 / p99 ${ms(at(0.5))} / ${ms(p99)} ms${
        slowest
          ? `; its slowest: ${STAGES.map((name, i) => `${name} ${ms(slowest[i]!)}`).join(", ")} (largest ${STAGES[largest]})`
          : ""
      }`,
    });
  }
  return result;
}
