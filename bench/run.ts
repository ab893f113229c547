/**
 * `pnpm bench`: the system measured against its limit in the same run. A bare Hono server
 * (same JSON, from memory) runs beside the system; each HTTP scenario loads both alternately
 * (ABAB) and is reported as req/s of 2xx, p50/p95/p99, non-2xx by status and the ratio to the
 * baseline; with the system's time to /readyz and the RSS of its whole process tree. Then the
 * other measurements. The output is Markdown, for docs/performance.md.
 *
 *   pnpm bench                      full run: 32 connections, 3 s warm-up + 10 s, 2 ABAB rounds
 *   pnpm bench --quick              a smoke (CI): small data, short windows, 1 round; not a speed gate
 *   pnpm bench --only=GET,POST      scenarios, fixtures or scripts whose name contains one of these
 *                                   (a term that is a whole name selects that name alone)
 *   pnpm bench --cluster            on `pnpm cluster up` (three NATS nodes, JetStream replicas 3, two
 *                                   processes of every service, each on a host of its own; root only)
 *   pnpm bench --replicas=2         REPLICAS of every service (1 on a single host, 2 in a cluster)
 *   pnpm bench --rate=75            the one-registration measurement at 75 orders/s, not 300 (its
 *                                   targets are judged at 300 only)
 *   pnpm bench --profile            CPU profiles of every process of the system (--cpu-prof), summarised
 *   pnpm bench --keep               keep the data directories, logs and profiles
 *
 * Exits non-zero when the harness did not work (no 2xx, mostly errors, a measurement failed),
 * never because a target was missed.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { tempDir } from "@cheese/testing";
import { startBaseline } from "./harness/baseline.ts";
import { compareWithBaseline } from "./harness/compare.ts";
import { summariseProfiles, type Window } from "./harness/profile.ts";
import {
  cpuTable,
  harnessProblems,
  header,
  httpTables,
  measurementTable,
  natsTable,
} from "./harness/report.ts";
import type { BenchOptions, HttpScenario, Measurement } from "./harness/scenario.ts";
import { selection } from "./harness/select.ts";
import { ONE_REGISTRATION_RATE } from "./scenarios/deliveries.ts";
import { scenarios, scripts } from "./scenarios/index.ts";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    cluster: { type: "boolean", default: false },
    replicas: { type: "string" },
    rate: { type: "string" },
    profile: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});
const quick = args.quick;
const cluster = args.cluster;
const root = tempDir("bench");
const options: BenchOptions = {
  system: cluster ? "cluster" : "single",
  quick,
  connections: 32,
  warmupSeconds: quick ? 1 : 3,
  seconds: quick ? 2 : 10,
  rounds: quick ? 1 : 2,
  replicas: Number(args.replicas ?? (cluster ? 2 : 1)),
  oneRegistrationRate: Number(args.rate ?? (quick ? 30 : ONE_REGISTRATION_RATE)),
  root: root.path,
  keep: args.keep,
};
if (!(Number.isInteger(options.oneRegistrationRate) && options.oneRegistrationRate > 0))
  throw new Error(`--rate takes a whole number of orders a second above 0, not ${args.rate}`);
const all = scenarios(options);
const wanted = selection(args.only, [
  ...all.flatMap((s) => (s.kind === "http" ? [s.name, s.fixture.name] : [s.name])),
  ...Object.keys(scripts),
]);

const http = all.filter((s): s is HttpScenario => s.kind === "http" && wanted(s.name, s.fixture.name));
const measurements = all.filter((s): s is Measurement => s.kind === "measurement" && wanted(s.name));
const profileDir = join(root.path, "profiles");
const progress = (line: string) => console.error(`bench: ${line}`);
const problems: string[] = [];

console.log(header(options));
if (http.length > 0) {
  const baseline = await startBaseline();
  let windows: Window[] = [];
  try {
    if (args.profile) mkdirSync(profileDir);
    const results = await compareWithBaseline(
      http,
      {
        ...options,
        baseline,
        // Node refuses --cpu-prof in NODE_OPTIONS; the launcher's services inherit its own flags.
        ...(args.profile ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] } : {}),
      },
      progress,
    );
    windows = results.flatMap((r) => r.windows);
    console.log(`\n${httpTables(results)}\n\n${cpuTable(results)}`);
    const nats = natsTable(results);
    if (nats) console.log(`\n${nats}`);
    problems.push(...harnessProblems(results));
  } finally {
    await baseline.stop();
  }
  if (args.profile) console.log(`\n${summariseProfiles(profileDir, windows)}`);
}
for (const measurement of measurements) {
  progress(`${measurement.name}`);
  // Each measurement that starts a system of its own profiles it into a directory of its own.
  const dir = join(profileDir, measurement.name.replaceAll(/[^a-z0-9]+/gi, "-"));
  const profile = args.profile
    ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${dir}`], windows: [] as Window[] }
    : undefined;
  if (profile) mkdirSync(dir, { recursive: true });
  try {
    const rows = await measurement.run({ ...options, ...(profile ? { profile } : {}) });
    console.log(`\n${measurementTable(measurement.name, rows)}`);
  } catch (error) {
    problems.push(`${measurement.name} failed: ${(error as Error).stack ?? error}`);
  }
  if (profile?.windows.length) console.log(`\n${summariseProfiles(dir, profile.windows)}`);
}
if (!quick && !cluster) {
  for (const [name, script] of Object.entries(scripts)) {
    if (!wanted(name)) continue;
    console.log(`\n#### ${name}\n`);
    await script();
  }
}

if (args.keep) progress(`kept ${root.path}`);
else root.remove();
if (problems.length > 0) {
  console.error(`bench: the harness did not work:\n  ${problems.join("\n  ")}`);
  process.exitCode = 1;
}
