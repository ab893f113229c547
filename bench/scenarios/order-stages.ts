/**
 * Where an order's webhook deliveries spend their time, read back from the embedded stores after a
 * run: the ordering event's append, its publish (the bus's timestamp, carried as the webhook's
 * `created_at`), the fan-out's record, each delivery's creation (one per registration), its first
 * attempt's start, and the receiver's arrival. Printed per stage (p50 / p99) and per second of
 * the run (is the tail the first seconds?); across runs at rising rates, the stage that
 * saturates first.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { ms } from "../harness/compare.ts";
import { percentiles } from "../harness/percentiles.ts";
import type { MeasuredRow } from "../harness/scenario.ts";

/** One delivery: of an order, to a registration. */
export const deliveryKey = (orderId: string, webhookId: number) => `${orderId} ${webhookId}`;

/** What the load generator knows of one delivery: when its order was sent, answered, it arrived. */
export interface OrderTimes {
  sentAt: number;
  answeredAt: number;
  receivedAt: number;
}

export const STAGES = [
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

/** Per delivery (`deliveryKey`): the five stages' durations (ms), from the stores of `dataDir`. */
function stagesOf(dataDir: string, deliveries: ReadonlyMap<string, OrderTimes>): Map<string, number[]> {
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
  /** By delivery key, and by delivery stream while its first attempt is looked for. */
  const byDelivery = new Map<string, { created: number; started?: number }>();
  const byStream = new Map<string, { created: number; started?: number }>();
  for (const [stream, typeAndData, at] of rows(
    notification,
    "SELECT stream, type || ' ' || data, created_at FROM events WHERE category = 'delivery' AND type IN ('DeliveryCreated', 'AttemptStarted') ORDER BY position",
  )) {
    if (typeAndData.startsWith("DeliveryCreated ")) {
      const facts = JSON.parse(typeAndData.slice("DeliveryCreated ".length)) as {
        eventId: string;
        webhookId: number;
      };
      const orderId = recorded.get(facts.eventId)?.orderId;
      if (!orderId) continue;
      const delivery = { created: time(at) };
      byDelivery.set(deliveryKey(orderId, facts.webhookId), delivery);
      byStream.set(stream, delivery);
    } else {
      const delivery = byStream.get(stream);
      if (delivery && delivery.started === undefined) delivery.started = time(at);
    }
  }
  const orderEvents = new Map([...recorded.values()].map((r) => [r.orderId, r]));
  const stages = new Map<string, number[]>();
  for (const [key, times] of deliveries) {
    const orderId = key.slice(0, key.indexOf(" "));
    const event = orderEvents.get(orderId);
    const append = appended.get(orderId);
    const delivery = byDelivery.get(key);
    if (!event || append === undefined || delivery?.started === undefined) continue;
    stages.set(key, [
      event.published - append,
      event.recorded - event.published,
      delivery.created - event.recorded,
      delivery.started - delivery.created,
      times.receivedAt - delivery.started,
    ]);
  }
  return stages;
}

/** Each stage's p99 (ms) over the deliveries of one run, in `STAGES` order; undefined when none were found. */
export function stageP99s(
  dataDir: string,
  deliveries: ReadonlyMap<string, OrderTimes>,
): number[] | undefined {
  const all = [...stagesOf(dataDir, deliveries).values()];
  if (all.length === 0) return undefined;
  return STAGES.map((_, i) => percentiles(all.map((s) => s[i]!))(0.99));
}

/**
 * The stage that saturates first, of runs at rising rates (each with its stages' p99s): the one
 * whose p99 grew the most from the lowest rate's run to `at` (the first run past the limit, or the
 * highest rate run). Growth, not size: a stage that is slow at every rate is not saturating.
 */
export function saturatedStage(lowest: readonly number[], at: readonly number[]): string {
  let largest = 0;
  for (let i = 1; i < STAGES.length; i++) {
    if (at[i]! - lowest[i]! > at[largest]! - lowest[largest]!) largest = i;
  }
  return STAGES[largest]!;
}

/** Rows: each stage's p50 / p99, then per second of the run the webhook p50 / p99 and its largest stage at p99. */
export function stageRows(dataDir: string, deliveries: ReadonlyMap<string, OrderTimes>): MeasuredRow[] {
  const stages = stagesOf(dataDir, deliveries);
  if (stages.size === 0) return [{ name: "stages", value: "none found in the stores" }];
  const all = [...stages.values()];
  const result: MeasuredRow[] = STAGES.map((name, i) => {
    const at = percentiles(all.map((s) => s[i]!));
    return {
      name: `  stage ${name}`,
      value: `p50 / p99 ${ms(at(0.5))} / ${ms(at(0.99))} ms`,
    };
  });
  const start = Math.min(...[...deliveries.values()].map((o) => o.sentAt));
  const seconds = new Map<number, string[]>();
  for (const [key, delivery] of deliveries) {
    const second = Math.floor((delivery.sentAt - start) / 1000);
    const keys = seconds.get(second) ?? [];
    keys.push(key);
    seconds.set(second, keys);
  }
  for (const [second, ids] of [...seconds].sort(([a], [b]) => a - b)) {
    const latencies = ids.map((id) => deliveries.get(id)!.receivedAt - deliveries.get(id)!.answeredAt);
    const at = percentiles(latencies);
    const p99 = at(0.99);
    const tail = ids.filter(
      (id) => deliveries.get(id)!.receivedAt - deliveries.get(id)!.answeredAt >= p99 && stages.has(id),
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
