/**
 * What a benchmark scenario is. Two kinds:
 *
 * - `HttpScenario`: one kind of request, sent with the same load to the system and to the bare
 *   Hono baseline (same JSON, from memory), alternately (ABAB); the harness reports req/s of 2xx,
 *   latency percentiles, non-2xx by status and the ratio to the baseline.
 * - `Measurement`: anything else (a pipeline's end-to-end latency at a fixed rate, a rebuild's
 *   events/s): it runs on its own and returns the rows it measured.
 *
 * Scenarios with the same `Fixture` share one start of the system; each fixture starts a fresh
 * system on its own DATA_DIR, and the harness reports its time to /readyz and its memory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Window } from "./profile.ts";
import type { SystemKind } from "./system.ts";

export interface BenchOptions {
  /** `single` (`pnpm start`'s shape) or `cluster` (`pnpm cluster up`'s: `--cluster`). */
  system: SystemKind;
  /** `--quick`: small data, short windows, one round; shows the harness works, not how fast. */
  quick: boolean;
  /** Connections per load (32). */
  connections: number;
  warmupSeconds: number;
  seconds: number;
  /** ABAB rounds (2; 1 when quick). */
  rounds: number;
  /** REPLICAS of every service (1 on a single host, 2 in a cluster, unless `--replicas`). */
  replicas: number;
  /**
   * `--rate`: the orders a second of the one-registration measurement (300; 30 with `--quick`).
   * Its targets are judged at 300 only: another rate is for a machine that 300 saturates, or for
   * finding where a system starts to queue.
   */
  oneRegistrationRate: number;
  /**
   * `--profile`: the node flags the system's processes start with (`--cpu-prof`), and where a
   * measurement adds the spans of the monotonic clock its profiles are summarised over.
   */
  profile?: { nodeArgs: string[]; windows: Window[] };
  /** The run's directory: the fixtures' data, and each measurement's own ({@link measurementDir}). */
  root: string;
  /** `--keep`: the run's directory stays, with every system's data and logs. */
  keep: boolean;
}

/**
 * A directory of a measurement's own in the run's: its systems' data and logs. `remove` empties
 * it once the measurement is done, unless the run keeps its directory (`--keep`).
 */
export function measurementDir(options: BenchOptions, name: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(options.root, `${name}-`));
  return { path, remove: () => options.keep || rmSync(path, { recursive: true, force: true }) };
}

/** One request as autocannon sends it. `body` is sent as given (JSON text). */
export interface BenchRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** From the root, e.g. `/v2/cheeses/7`. */
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

/** A document of a collection as the API returns it; the baseline serves these from memory. */
export type Doc = { id: number } & Record<string, unknown>;

/** What a fixture put in the system: the baseline is seeded with the same documents. */
export interface FixtureData {
  /** Per collection (the path segment after /v2/, e.g. `cheeses`), as the API returns them. */
  collections: Record<string, Doc[]>;
  /** Headers every request to the system carries (credentials). */
  headers: Record<string, string>;
}

/** Talks to a running system while seeding it. */
export interface SystemClient {
  /** `http://127.0.0.1:<port>` */
  rootUrl: string;
  dataDir: string;
  /** Operator credentials: a client-credentials bearer token (enterprise plan, every scope). */
  headers: Record<string, string>;
  /** fetch() under rootUrl with the operator's headers (and JSON content type when a body is given). */
  fetch(
    path: string,
    init?: { method?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
}

export interface Fixture {
  name: string;
  /** Before the system starts: writes into the empty DATA_DIR (e.g. events straight into SQLite). */
  prepare?(dataDir: string, options: BenchOptions): Promise<void>;
  /** Once /readyz is 200: seeds through the API if needed; returns what the baseline must hold. */
  seed(system: SystemClient, options: BenchOptions): Promise<FixtureData>;
}

export interface Targets {
  /** Minimum ratio of the system's 2xx req/s to the baseline's. */
  ratio?: number;
  /** Maximum p99 of the system, ms. */
  p99Ms?: number;
  /** Maximum CPU time per 2xx answer, ms, every process of the system together. */
  cpuMs?: number;
}

export interface HttpScenario {
  kind: "http";
  /** Shown in the report, e.g. `GET /v2/cheeses/{id}`. */
  name: string;
  fixture: Fixture;
  /** The i-th request of this load (i counts across connections and rounds). */
  request(data: FixtureData, i: number): BenchRequest;
  targets?: Targets;
}

/** One line of a measurement's report: a name, the value with its unit, the target if any. */
export interface MeasuredRow {
  name: string;
  value: string;
  target?: string;
  /** undefined when there is no target. */
  met?: boolean;
}

export interface Measurement {
  kind: "measurement";
  name: string;
  run(options: BenchOptions): Promise<MeasuredRow[]>;
}

export type Scenario = HttpScenario | Measurement;
