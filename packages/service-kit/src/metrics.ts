import { categoryOf, type EventStore } from "@cheese/event-store";
import type { DeadLetter } from "@cheese/messaging";
import { Counter, collectDefaultMetrics, Gauge, Histogram, type LabelValues, Registry } from "prom-client";

/**
 * Metrics (docs/operations.md, "Metrics"): one Prometheus registry per process, served at
 * `/metrics` on the health port of every service the process runs. Labels take few values
 * (route templates, subjects, categories, outcomes), never ids or raw paths. A metric's series
 * are looked up once per label combination and kept (`seriesOf`), and a kept series adds to its
 * value in the registry at once (`KeptCounter`, `KeptHistogram`), so counting a request
 * allocates nothing and hashes nothing.
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
  return new KeptCounter({ ...definition, registers: [metricsRegistry] });
}

/** Latencies in seconds, from 5 ms to 10 s (prom-client's default buckets). */
export function histogram<L extends string>(definition: MetricDefinition<L>): Histogram<L> {
  return new KeptHistogram({ ...definition, registers: [metricsRegistry] });
}

/** What prom-client keeps of a metric: its series by the hash of their labels. */
interface SeriesMap<Entry> {
  hashMap: Record<string, Entry | undefined>;
}
interface HistogramEntry {
  labels: Record<string, string | number>;
  sum: number;
  count: number;
  bucketValues: Record<string, number>;
}

/**
 * prom-client's counter, whose labelled series (`labels(...)`) find their value once. prom-client's
 * own series builds its labels' hash (a string) and validates them on every `inc`, then looks the
 * string up (~0.4 µs, three times per get through the gateway); this one keeps the hash its first
 * `inc` returns and adds to the value it names. Anything else (the value gone after `reset()` or
 * `remove()`, a value prom-client refuses) goes through prom-client's `inc` as before.
 */
class KeptCounter<L extends string> extends Counter<L> {
  override labels(...values: string[]): Counter.Internal;
  override labels(labels: LabelValues<L>): Counter.Internal;
  override labels(...args: unknown[]): Counter.Internal {
    const series = (super.labels as (...args: unknown[]) => Counter.Internal)(...args);
    const kept = this as unknown as SeriesMap<{ value: number }>;
    let hash: string | undefined;
    return {
      inc(value?: number) {
        const entry = hash === undefined ? undefined : kept.hashMap[hash];
        if (entry !== undefined && (value === undefined || (value >= 0 && Number.isFinite(value)))) {
          entry.value += value ?? 1;
          return;
        }
        // prom-client's `inc` returns the hash it counted under.
        hash = (series.inc(value) as unknown as { labelHash?: string } | undefined)?.labelHash;
      },
    };
  }
}

/**
 * prom-client's histogram, whose labelled series (`labels(...)`) find their entry once: prom-client's
 * own series builds and hashes its labels and makes an object of them on every `observe` (~0.9 µs,
 * once per request through the gateway). The hash is prom-client's (the label names sorted,
 * `name:value,` each), checked against the entry its first `observe` made or found; should it not
 * name that entry (another prom-client), every `observe` goes through prom-client's as before.
 */
class KeptHistogram<L extends string> extends Histogram<L> {
  override labels(...values: string[]): Histogram.Internal<L>;
  override labels(labels: LabelValues<L>): Histogram.Internal<L>;
  override labels(...args: unknown[]): Histogram.Internal<L> {
    const series = (super.labels as (...args: unknown[]) => Histogram.Internal<L>)(...args);
    const metric = this as unknown as SeriesMap<HistogramEntry> & {
      labelNames: string[];
      upperBounds: readonly number[];
    };
    const labels: Record<string, string> = {};
    if (args.length === 1 && typeof args[0] === "object" && args[0] !== null) {
      for (const [name, value] of Object.entries(args[0]))
        if (value !== undefined) labels[name] = String(value);
    } else {
      metric.labelNames.forEach((name, i) => {
        if (args[i] !== undefined) labels[name] = String(args[i]);
      });
    }
    let candidate = "";
    for (const name of [...metric.labelNames].sort()) {
      if (labels[name] !== undefined) candidate += `${name}:${labels[name]},`;
    }
    const bounds = metric.upperBounds;
    const keys = bounds.map(String);
    // undefined: not looked for yet; null: prom-client's entry is not under this hash.
    let hash: string | null | undefined;
    return {
      observe(value: number) {
        const entry = hash ? metric.hashMap[hash] : undefined;
        if (entry === undefined || !Number.isFinite(value)) {
          series.observe(value);
          if (hash === undefined) hash = sameLabels(metric.hashMap[candidate], labels) ? candidate : null;
          return;
        }
        entry.sum += value;
        entry.count += 1;
        for (let i = 0; i < bounds.length; i++) {
          if (value <= bounds[i]!) {
            if (Object.hasOwn(entry.bucketValues, keys[i]!)) entry.bucketValues[keys[i]!]! += 1;
            break;
          }
        }
      },
      startTimer: series.startTimer,
    };
  }
}

function sameLabels(entry: HistogramEntry | undefined, labels: Record<string, string>): boolean {
  if (!entry) return false;
  const names = Object.keys(entry.labels).filter((name) => entry.labels[name] !== undefined);
  return (
    names.length === Object.keys(labels).length &&
    names.every((name) => String(entry.labels[name]) === labels[name])
  );
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
