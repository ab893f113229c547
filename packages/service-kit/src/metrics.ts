import { categoryOf, type EventStore } from "@cheese/event-store";
import type { DeadLetter } from "@cheese/messaging";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/**
 * Metrics (docs/operations.md, "Metrics"): one Prometheus registry per process, served at
 * `/metrics` on the health port of every service the process runs. Labels take few values
 * (route templates, subjects, categories, outcomes), never ids or raw paths. A metric's series
 * are looked up once per label combination and kept (`seriesOf`), so counting a request
 * allocates nothing.
 */
export const metricsRegistry = new Registry();

let processMetrics = false;

/** Node's process metrics (CPU, memory, event loop lag, GC, handles), from the first service started. */
export function collectProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

interface MetricDefinition<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
}

export function counter<L extends string>(definition: MetricDefinition<L>): Counter<L> {
  return new Counter({ ...definition, registers: [metricsRegistry] });
}

/** Latencies in seconds, from 5 ms to 10 s (prom-client's default buckets). */
export function histogram<L extends string>(definition: MetricDefinition<L>): Histogram<L> {
  return new Histogram({ ...definition, registers: [metricsRegistry] });
}

type LabelValue = string | number;

/**
 * Memoises what `make` builds per combination of label values (up to three), in nested maps, so
 * the hot path neither builds a label object nor hashes one: `seriesOf((route, status) =>
 * ({ count: requests.labels(route, String(status)) }))`.
 */
export function seriesOf<Series>(
  make: (a: string, b: string, c: string) => Series,
): (a: LabelValue, b?: LabelValue, c?: LabelValue) => Series {
  const root = new Map<LabelValue, Map<LabelValue, Map<LabelValue, Series>>>();
  return (a, b = "", c = "") => {
    let level1 = root.get(a);
    if (!level1) {
      level1 = new Map();
      root.set(a, level1);
    }
    let level2 = level1.get(b);
    if (!level2) {
      level2 = new Map();
      level1.set(b, level2);
    }
    let series = level2.get(c);
    if (series === undefined) {
      series = make(String(a), String(b), String(c));
      level2.set(c, series);
    }
    return series;
  };
}

type Source<L extends string> = { labels: Partial<Record<L, string>>; read: () => Promise<number> | number };

/**
 * A gauge read when scraped: each live component registers how to read its value (a count in a
 * read model, a projection's lag) and unregisters when it stops. When several components of
 * the process report the same labels (replicas in one process), the largest value is shown. A
 * source that fails or takes longer than 2 s is left out of that scrape.
 */
export function observedGauge<L extends string>(
  definition: MetricDefinition<L>,
): { observe(labels: Partial<Record<L, string>>, read: Source<L>["read"]): () => void } {
  const sources = new Set<Source<L>>();
  new Gauge({
    ...definition,
    registers: [metricsRegistry],
    async collect() {
      this.reset();
      const largest = new Map<string, { labels: Source<L>["labels"]; value: number }>();
      await Promise.all(
        [...sources].map(async (source) => {
          const value = await withDeadline(source.read, 2_000);
          if (value === undefined) return;
          const key = JSON.stringify(source.labels);
          const seen = largest.get(key);
          if (!seen || value > seen.value) largest.set(key, { labels: source.labels, value });
        }),
      );
      for (const { labels, value } of largest.values()) this.set(labels, value);
    },
  });
  return {
    observe(labels, read) {
      const source = { labels, read };
      sources.add(source);
      return () => sources.delete(source);
    },
  };
}

async function withDeadline(read: () => Promise<number> | number, ms: number): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(read),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

const rpcServerDuration = histogram({
  name: "cheese_rpc_server_duration_seconds",
  help: "Time a service took to answer an RPC, by subject and outcome (ok, refused: a 4xx answer, failed: 5xx)",
  labelNames: ["subject", "outcome"],
});
/** The RPC latency series of a subject and outcome. */
export const rpcServerSeries = seriesOf((subject, outcome) => rpcServerDuration.labels(subject, outcome));

/** How an RPC ended, from the status of the error it answered with (none: ok). */
export function rpcOutcome(status: number | undefined): "ok" | "refused" | "failed" {
  if (status === undefined) return "ok";
  return status < 500 ? "refused" : "failed";
}

const deadLettered = counter({
  name: "cheese_event_dead_letters_total",
  help: "Integration events moved to the dead letters after their consumer kept failing them, by consumer",
  labelNames: ["consumer"],
});

/** Counts a dead letter (the bus tells of each once, in the process whose consumer failed it). */
export function countDeadLetter(letter: DeadLetter): void {
  deadLettered.labels(letter.durable).inc();
}

const appended = counter({
  name: "cheese_events_appended_total",
  help: "Events appended to the event store, by stream category",
  labelNames: ["category"],
});
const appendedSeries = seriesOf((category) => appended.labels(category));

const projected = counter({
  name: "cheese_events_projected_total",
  help: "Events applied to read models, by projection",
  labelNames: ["projection"],
});
/** The counter of events a projection applied. */
export const projectedSeries = seriesOf((projection) => projected.labels(projection));

/** Seconds since the oldest event a projection has not applied yet was recorded; 0 when current. */
export const projectionLag = observedGauge({
  name: "cheese_projection_lag_seconds",
  help: "Age of the oldest event a projection has not applied yet (0: current), by projection",
  labelNames: ["projection"],
});

/** The event store, counting the events appended through it by category. */
export function countingAppends(store: EventStore): EventStore {
  return {
    async append(streamName, events, options) {
      const result = await store.append(streamName, events, options);
      appendedSeries(categoryOf(streamName)).inc(events.length);
      return result;
    },
    async appendStreams(appends) {
      const results = await store.appendStreams(appends);
      for (const { streamName, events } of appends) appendedSeries(categoryOf(streamName)).inc(events.length);
      return results;
    },
    readStream: (streamName, options) => store.readStream(streamName, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribe: (options) => store.subscribe(options),
    deleteStream: (streamName, options) => store.deleteStream(streamName, options),
    ping: () => store.ping(),
    openReads: () => store.openReads(),
    close: () => store.close(),
  };
}
