/**
 * Runs HTTP scenarios against the system and the baseline, alternately: per round, the system's
 * window then the baseline's (A B A B ...), each after its own warm-up. The best round of each
 * counts (the one least disturbed by whatever else ran on the machine), and the ratio is of the
 * two bests.
 */
import { mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import type { Baseline } from "./baseline.ts";
import { type LoadResult, runLoad } from "./load.ts";
import { type NatsTraffic, trafficPerUnit } from "./nats-traffic.ts";
import { monotonicUs, type Window } from "./profile.ts";
import type { BenchOptions, Fixture, FixtureData, HttpScenario, SystemClient } from "./scenario.ts";
import { benchToken, type System, startSystem, type TreeUsage } from "./system.ts";

/** A window's result with the CPU each process spent on it, ms per 2xx answer. */
export interface WindowResult extends LoadResult {
  /** Per process of the target (`nats-server`, `gateway`, ..., or `baseline`), and `load generator`. */
  cpuMsPerRequest: Record<string, number>;
  /** A cluster's window: its nats-servers' messages per 2xx answer, in words (`trafficPerUnit`). */
  natsPerRequest?: string;
}

export interface ScenarioResult {
  scenario: HttpScenario;
  system: WindowResult[];
  baseline: WindowResult[];
  /** Bytes: the system's process tree at its largest while this scenario ran (warm-ups included). */
  rssPeak: number;
}

export interface FixtureResult {
  fixture: string;
  readyMs: number;
  /** Bytes, the whole process tree of the launcher. */
  rssIdle: number;
  /** The largest over every scenario of the fixture, writes included. */
  rssPeak: number;
  /** The largest while the fixture's read scenarios (GET) ran; undefined when it has none. */
  rssPeakReads: number | undefined;
  rssEnd: number;
  rssByProcessEnd: Record<string, number>;
  loadAtStart: number;
  scenarios: ScenarioResult[];
  /** When the system's measured windows ran (for --profile). */
  windows: Window[];
}

/** The round with the most 2xx answers per second. */
export const best = <R extends LoadResult>(results: R[]): R =>
  results.reduce((a, b) => (b.okPerSecond > a.okPerSecond ? b : a));

export async function compareWithBaseline(
  scenarios: HttpScenario[],
  options: BenchOptions & { baseline: Baseline; nodeArgs?: string[] },
  progress: (line: string) => void,
): Promise<FixtureResult[]> {
  const fixtures = [...new Set(scenarios.map((s) => s.fixture))];
  const results: FixtureResult[] = [];
  for (const fixture of fixtures) {
    results.push(
      await runFixture(
        fixture,
        scenarios.filter((s) => s.fixture === fixture),
        options,
        progress,
      ),
    );
  }
  return results;
}

async function runFixture(
  fixture: Fixture,
  scenarios: HttpScenario[],
  options: BenchOptions & { baseline: Baseline; nodeArgs?: string[] },
  progress: (line: string) => void,
): Promise<FixtureResult> {
  const dataDir = join(options.root, fixture.name.replace(/[^\w.-]+/g, "-"));
  mkdirSync(dataDir, { recursive: true });
  if (fixture.prepare) {
    progress(`[${fixture.name}] preparing DATA_DIR`);
    await fixture.prepare(dataDir, options);
  }
  const loadAtStart = loadavg()[0]!;
  const system = await startSystem({
    kind: options.system,
    dataDir,
    replicas: options.replicas,
    ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
  });
  progress(
    `[${fixture.name}] /readyz 200 after ${(system.readyMs / 1000).toFixed(2)} s (log: ${system.logFile})`,
  );
  try {
    const client = await clientOf(system.rootUrl, dataDir);
    const data: FixtureData = await fixture.seed(client, options);
    await options.baseline.seed(data.collections);
    const settled = await settle(system);
    progress(
      `[${fixture.name}] seeded; ${settled.quiet ? "quiet" : "still busy"} after ${(settled.ms / 1000).toFixed(1)} s (${settled.cores.toFixed(2)} of a core in its last second)`,
    );
    const rssIdle = (await idleUsage(system.usage, options)).rss;
    let rssPeak = rssIdle;
    let scenarioPeak = rssIdle;
    const sampler = setInterval(() => {
      const rss = system.usage().rss;
      rssPeak = Math.max(rssPeak, rss);
      scenarioPeak = Math.max(scenarioPeak, rss);
    }, 500);
    const scenarioResults: ScenarioResult[] = [];
    const windows: Window[] = [];
    try {
      for (const scenario of scenarios) {
        let i = 0;
        const next = () => scenario.request(data, i++);
        const result: ScenarioResult = { scenario, system: [], baseline: [], rssPeak: 0 };
        scenarioPeak = system.usage().rss;
        for (let round = 1; round <= options.rounds; round++) {
          for (const [target, url, usage, traffic, into] of [
            ["system", system.rootUrl, system.usage, system.natsTraffic, result.system],
            ["baseline", options.baseline.rootUrl, options.baseline.usage, undefined, result.baseline],
          ] as const) {
            if (options.warmupSeconds > 0) {
              await runLoad({ url, connections: options.connections, seconds: options.warmupSeconds, next });
            }
            const startUs = monotonicUs();
            const measured = await measuredWindow(
              usage,
              target === "baseline" ? "baseline" : undefined,
              () => runLoad({ url, connections: options.connections, seconds: options.seconds, next }),
              traffic,
            );
            if (target === "system") windows.push({ scenario: scenario.name, startUs, endUs: monotonicUs() });
            into.push(measured);
            progress(`[${fixture.name}] ${scenario.name} round ${round} ${target}: ${describe(measured)}`);
          }
        }
        result.rssPeak = Math.max(scenarioPeak, system.usage().rss);
        scenarioResults.push(result);
      }
    } finally {
      clearInterval(sampler);
    }
    const end = system.usage();
    return {
      fixture: fixture.name,
      readyMs: system.readyMs,
      rssIdle,
      rssPeak: Math.max(rssPeak, end.rss),
      rssPeakReads: readsPeak(scenarioResults, data),
      rssEnd: end.rss,
      rssByProcessEnd: Object.fromEntries(Object.entries(end.byProcess).map(([name, u]) => [name, u.rss])),
      loadAtStart,
      scenarios: scenarioResults,
      windows,
    };
  } finally {
    await system.stop();
  }
}

/**
 * Runs a load window and adds the CPU every process of the target (and this one) spent, and the
 * messages its nats-servers carried when it says (read outside the CPU's readings).
 */
async function measuredWindow(
  usage: () => TreeUsage,
  /** Counts every process of the target under this one name. */
  label: string | undefined,
  load: () => Promise<LoadResult>,
  natsTraffic?: () => Promise<NatsTraffic>,
): Promise<WindowResult> {
  const trafficBefore = await natsTraffic?.();
  const before = usage().byProcess;
  const ownBefore = process.cpuUsage();
  const result = await load();
  const own = process.cpuUsage(ownBefore);
  const after = usage().byProcess;
  const perRequest = (cpuMs: number) => (result.ok > 0 ? cpuMs / result.ok : Number.NaN);
  const cpuMsPerRequest: Record<string, number> = {};
  for (const [name, { cpuMs }] of Object.entries(after)) {
    const key = label ?? name;
    cpuMsPerRequest[key] = (cpuMsPerRequest[key] ?? 0) + perRequest(cpuMs - (before[name]?.cpuMs ?? 0));
  }
  cpuMsPerRequest["load generator"] = perRequest((own.user + own.system) / 1000);
  const trafficAfter = trafficBefore && (await natsTraffic?.());
  return {
    ...result,
    cpuMsPerRequest,
    ...(trafficBefore && trafficAfter
      ? { natsPerRequest: trafficPerUnit(trafficBefore, trafficAfter, result.ok) }
      : {}),
  };
}

/**
 * Waits until the system has worked through what seeding left behind (projections, the outbox
 * relay publishing a restored history, consumers): its process tree below its `quietCores` over
 * a second, at most `timeoutMs`.
 */
export async function settle(
  { usage, quietCores }: Pick<System, "usage" | "quietCores">,
  timeoutMs = 180_000,
): Promise<{ quiet: boolean; ms: number; cores: number }> {
  const started = performance.now();
  const cpu = () => Object.values(usage().byProcess).reduce((sum, u) => sum + u.cpuMs, 0);
  let before = cpu();
  let cores = Number.NaN;
  while (performance.now() - started < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = cpu();
    cores = (now - before) / 1000;
    if (now - before < quietCores * 1000) return { quiet: true, ms: performance.now() - started, cores };
    before = now;
  }
  return { quiet: false, ms: performance.now() - started, cores };
}

/**
 * The system's memory once it has been quiet long enough to give back what it only needed while
 * busy: each service releases its young generation once V8 sees its allocation rate low over
 * its last 5 s (packages/service-kit/src/young-generation.ts), 5–7 s after its last work. After
 * `settle`, read every second for at least 8 s and then until the whole tree's RSS has not
 * fallen by a megabyte for three readings in a row, at most 30 s. With `--quick` (a smoke of the
 * harness, no target) the three steady readings alone: what it reads is then what the services
 * hold before they give anything back.
 */
export async function idleUsage(usage: () => TreeUsage, { quick = false } = {}): Promise<TreeUsage> {
  let last = usage();
  let steady = 0;
  const atLeast = quick ? 3 : 8;
  for (let read = 1; read <= 30 && (read <= atLeast || steady < 3); read++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = usage();
    steady = now.rss < last.rss - 1024 * 1024 ? 0 : steady + 1;
    last = now;
  }
  return last;
}

export async function clientOf(rootUrl: string, dataDir: string): Promise<SystemClient> {
  const headers = { authorization: `Bearer ${await benchToken(rootUrl)}` };
  return {
    rootUrl,
    dataDir,
    headers,
    fetch: (path, init = {}) =>
      fetch(`${rootUrl}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: {
          ...headers,
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      }),
  };
}

export function describe(r: LoadResult): string {
  const failures = Object.entries(r.non2xx).map(([status, n]) => `${status}×${n}`);
  if (r.errors) failures.push(`errors×${r.errors}`);
  return (
    `${r.okPerSecond.toFixed(0)} 2xx/s, p50 ${ms(r.p50)} p95 ${ms(r.p95)} p99 ${ms(r.p99)} ms` +
    `${failures.length ? `, ${failures.join(" ")}` : ""} (load ${r.load.toFixed(1)})`
  );
}

export const ms = (value: number) =>
  Number.isNaN(value) ? "–" : value < 10 ? value.toFixed(1) : value.toFixed(0);

/** The largest RSS while a scenario whose requests are GETs ran: "under the read load". */
export function readsPeak(results: ScenarioResult[], data: FixtureData): number | undefined {
  const reads = results.filter((r) => r.scenario.request(data, 0).method === "GET");
  return reads.length === 0 ? undefined : Math.max(...reads.map((r) => r.rssPeak));
}
