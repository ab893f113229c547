/** The report: Markdown tables, ready to paste into docs/performance.md. */
import { execFileSync } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { best, type FixtureResult, ms, type ScenarioResult } from "./compare.ts";
import type { LoadResult } from "./load.ts";
import type { BenchOptions, MeasuredRow, Targets } from "./scenario.ts";

const number = (n: number) => Math.round(n).toLocaleString("en-US");
const mb = (bytes: number) => `${number(bytes / 1024 / 1024)} MB`;
const check = (met: boolean | undefined) => (met === undefined ? "" : met ? " ✅" : " ❌");

/** The nats-server on PATH, which the launcher and the cluster run ("nats-server v2.15.1"). */
function natsServerVersion(): string {
  try {
    return execFileSync("nats-server", ["--version"], { encoding: "utf8" }).trim().replace(":", "");
  } catch {
    return "no nats-server on PATH";
  }
}

export function header(options: BenchOptions): string {
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
      encoding: "utf8",
    });
    if (dirty.trim()) commit += " (with uncommitted changes)";
  } catch {
    // not a git checkout
  }
  return [
    `### pnpm bench${options.system === "cluster" ? " --cluster" : ""}${options.quick ? " --quick" : ""}: commit ${commit}, ${new Date().toISOString().slice(0, 16)}Z`,
    "",
    `Node ${process.version}, ${natsServerVersion()}, ${availableParallelism()} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} at the start; ${
      options.system === "cluster"
        ? "`pnpm cluster up`: three NATS nodes (NATS_REPLICAS=3) and every service in processes of its own, each on a host (network namespace) of its own, behind the launcher's balancer"
        : "`pnpm start`'s layout"
    }; REPLICAS=${options.replicas}; ${options.connections} connections, ` +
      `${options.warmupSeconds} s warm-up + ${options.seconds} s per window, ${options.rounds} ABAB round(s), best round of each side.`,
  ].join("\n");
}

function latencies(r: LoadResult): string {
  return `${ms(r.p50)} / ${ms(r.p95)} / ${ms(r.p99)}`;
}

function failures(results: LoadResult[]): string {
  const total: Record<string, number> = {};
  for (const r of results) {
    for (const [status, n] of Object.entries(r.non2xx)) total[status] = (total[status] ?? 0) + n;
    if (r.errors) total.errors = (total.errors ?? 0) + r.errors;
  }
  const text = Object.entries(total)
    .map(([status, n]) => `${status}: ${number(n)}`)
    .join(", ");
  return text || "–";
}

/** CPU ms per 2xx answer of every process of the system together (the load generator left out). */
export function systemCpuMs(cpuMsPerRequest: Record<string, number>): number {
  return Object.entries(cpuMsPerRequest).reduce(
    (sum, [name, ms]) => (name === "load generator" ? sum : sum + ms),
    0,
  );
}

function judged(targets: Targets | undefined, ratio: number, p99: number, cpuMs: number): string {
  if (!targets) return "";
  const parts: string[] = [];
  if (targets.cpuMs !== undefined)
    parts.push(`CPU ≤ ${targets.cpuMs} ms per answer${check(cpuMs <= targets.cpuMs)}`);
  if (targets.ratio !== undefined) parts.push(`≥ ${targets.ratio}${check(ratio >= targets.ratio)}`);
  if (targets.p99Ms !== undefined) parts.push(`p99 ≤ ${targets.p99Ms} ms${check(p99 <= targets.p99Ms)}`);
  return parts.join(", ");
}

function scenarioRow(result: ScenarioResult): string {
  const system = best(result.system);
  const baseline = best(result.baseline);
  const ratio = system.okPerSecond / baseline.okPerSecond;
  const perRound = result.system.map((s, i) => (s.okPerSecond / result.baseline[i]!.okPerSecond).toFixed(2));
  const loads = [...result.system, ...result.baseline].map((r) => r.load);
  return `| ${[
    result.scenario.name,
    number(system.okPerSecond),
    latencies(system),
    failures(result.system),
    number(baseline.okPerSecond),
    latencies(baseline),
    `**${ratio.toFixed(2)}**${perRound.length > 1 ? ` (${perRound.join(", ")})` : ""}`,
    judged(result.scenario.targets, ratio, system.p99, systemCpuMs(system.cpuMsPerRequest)),
    `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  ].join(" | ")} |`;
}

export function httpTables(fixtures: FixtureResult[]): string {
  const lines = [
    "| scenario | system 2xx/s | system p50 / p95 / p99 ms | system non-2xx | baseline 2xx/s | baseline p50 / p95 / p99 ms | ratio (per round) | target | load 1m |",
    "|---|---:|---|---|---:|---|---|---|---|",
    ...fixtures.flatMap((f) => f.scenarios.map(scenarioRow)),
    "",
    "| system (fixture) | /readyz 200 after start | RSS idle (seeded) | RSS peak under the read load (GET scenarios) | RSS peak, every scenario | RSS at the end | load 1m at start |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...fixtures.map(
      (f) =>
        `| ${f.fixture} | ${(f.readyMs / 1000).toFixed(2)} s | ${mb(f.rssIdle)} | ${f.rssPeakReads === undefined ? "–" : mb(f.rssPeakReads)} | ${mb(f.rssPeak)} | ${mb(f.rssEnd)} | ${f.loadAtStart.toFixed(1)} |`,
    ),
    "",
    ...fixtures.map(
      (f) =>
        `RSS at the end, ${f.fixture}: ${Object.entries(f.rssByProcessEnd)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, bytes]) => `${name} ${mb(bytes)}`)
          .join(", ")}.`,
    ),
  ];
  return lines.join("\n");
}

/** CPU time per 2xx answer, per process, in each scenario's best round: where a request's CPU goes. */
export function cpuTable(fixtures: FixtureResult[]): string {
  const results = fixtures.flatMap((f) => f.scenarios);
  const processes = [...new Set(results.flatMap((r) => Object.keys(best(r.system).cpuMsPerRequest)))].filter(
    (name) => name !== "load generator",
  );
  processes.sort((a, b) => a.localeCompare(b));
  const cell = (value: number | undefined) =>
    value === undefined || Number.isNaN(value) ? "–" : value.toFixed(3);
  return [
    `| CPU ms per 2xx answer | ${processes.join(" | ")} | system total | baseline | load generator (system / baseline) |`,
    `|---|${processes.map(() => "---:").join("|")}|---:|---:|---:|`,
    ...results.map((r) => {
      const system = best(r.system).cpuMsPerRequest;
      const baseline = best(r.baseline).cpuMsPerRequest;
      const total = processes.reduce((sum, name) => sum + (system[name] ?? 0), 0);
      return `| ${r.scenario.name} | ${processes.map((name) => cell(system[name])).join(" | ")} | ${cell(total)} | ${cell(baseline.baseline)} | ${cell(system["load generator"])} / ${cell(baseline["load generator"])} |`;
    }),
  ].join("\n");
}

/**
 * A cluster's: the messages its nats-servers carried per 2xx answer, in each scenario's best round
 * (undefined on the single host, whose nats-server serves no monitoring).
 */
export function natsTable(fixtures: FixtureResult[]): string | undefined {
  const rows = fixtures
    .flatMap((f) => f.scenarios)
    .flatMap((r) => {
      const words = best(r.system).natsPerRequest;
      return words === undefined ? [] : [`| ${r.scenario.name} | ${words} |`];
    });
  if (rows.length === 0) return undefined;
  return [
    "| NATS messages per 2xx answer | the servers, the clients, the streams |",
    "|---|---|",
    ...rows,
  ].join("\n");
}

export function measurementTable(name: string, rows: MeasuredRow[]): string {
  return [
    `| ${name} | value | target |`,
    "|---|---:|---|",
    ...rows.map((row) => `| ${row.name} | ${row.value} | ${row.target ?? ""}${check(row.met)} |`),
  ].join("\n");
}

/** Whether the harness itself worked: every scenario got answers, mostly 2xx. */
export function harnessProblems(fixtures: FixtureResult[]): string[] {
  const problems: string[] = [];
  for (const f of fixtures) {
    for (const result of f.scenarios) {
      for (const [side, results] of [
        ["system", result.system],
        ["baseline", result.baseline],
      ] as const) {
        const ok = results.reduce((sum, r) => sum + r.ok, 0);
        const other = results.reduce(
          (sum, r) => sum + r.errors + Object.values(r.non2xx).reduce((a, b) => a + b, 0),
          0,
        );
        if (ok === 0 || other > ok) {
          problems.push(
            `${result.scenario.name} on the ${side}: ${ok} 2xx, ${other} other answers or errors`,
          );
        }
      }
    }
  }
  return problems;
}
