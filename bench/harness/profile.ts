/**
 * `pnpm bench --profile`: every node process of the system runs with `--cpu-prof`; when the
 * system stops, each writes a V8 CPU profile. This summarises them per scenario: only the samples
 * taken during that scenario's measured windows on the system count (V8 stamps samples with the
 * monotonic clock, the same as `process.hrtime`), so start-up and seeding do not blur the picture.
 * For each process: where its busy time went by package (hono, zod, nats, better-sqlite3, ...,
 * our packages, Node's internals, GC), and the functions with the most self time.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** A span of the monotonic clock, µs (`process.hrtime.bigint() / 1000n`). */
export interface Window {
  scenario: string;
  startUs: number;
  endUs: number;
}

export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const PACKAGE = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/;

/** The package, our project, or the part of Node a frame belongs to. */
function categoryOf({ functionName, url }: CallFrame): string {
  if (!url) {
    if (functionName.startsWith("(")) return functionName; // (garbage collector), (program), (idle)
    return "native";
  }
  const ours = /\/(packages|services|apps)\/([^/]+)\//.exec(url);
  if (ours && !url.includes("node_modules"))
    return `${ours[1] === "services" ? "service " : "@cheese/"}${ours[2]}`;
  const pkg = PACKAGE.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith("node:internal/")) return `node:${url.slice("node:internal/".length).split("/")[0]}`;
  if (url.startsWith("node:")) return url;
  return url;
}

/**
 * Which process wrote a profile: an event store's SQLite writer thread (a profile of its own,
 * `sqlite-writer.js`), the launcher (its balancer), or the service whose code it ran.
 */
function processOf(profile: CpuProfile): string {
  if (profile.nodes.some(({ callFrame }) => callFrame.url.endsWith("/sqlite-writer.js")))
    return "a SQLite writer thread";
  // The launcher loads some of the services' modules beside its own; a service starts from the
  // launcher's `service` entry, never from its `cli`.
  if (
    profile.nodes.some(({ callFrame }) =>
      /\/apps\/launcher\/(dist\/cli\.js|src\/cli\.ts)$/.test(callFrame.url),
    )
  )
    return "launcher";
  const counts = new Map<string, number>();
  for (const { callFrame } of profile.nodes) {
    const match = /\/services\/([^/]+)\/(dist|src)\//.exec(callFrame.url);
    if (match) counts.set(match[1]!, (counts.get(match[1]!) ?? 0) + 1);
  }
  const [service] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? [];
  return service ?? "launcher";
}

interface Tally {
  busyUs: number;
  byCategory: Map<string, number>;
  byFunction: Map<string, number>;
}

function tally(profile: CpuProfile, windows: Window[]): Tally {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const result: Tally = { busyUs: 0, byCategory: new Map(), byFunction: new Map() };
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    // The time until the next sample is this sample's.
    const spent = profile.timeDeltas[i + 1] ?? 0;
    if (!windows.some((w) => at >= w.startUs && at < w.endUs)) continue;
    const frame = frames.get(profile.samples[i]!)!;
    if (frame.functionName === "(idle)") continue;
    result.busyUs += spent;
    const category = categoryOf(frame);
    result.byCategory.set(category, (result.byCategory.get(category) ?? 0) + spent);
    const file = frame.url.split("/").slice(-2).join("/");
    const name =
      `${frame.functionName || "(anonymous)"} ${file ? `${file}:${frame.lineNumber + 1}` : ""}`.trim();
    result.byFunction.set(name, (result.byFunction.get(name) ?? 0) + spent);
  }
  return result;
}

const top = (map: Map<string, number>, total: number, n: number) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => `${name} ${((us / total) * 100).toFixed(0)}%`)
    .join(", ");

/** Markdown: per scenario, per process, busy time by package and the hottest functions. */
export function summariseProfiles(dir: string, windows: Window[]): string {
  const profiles = readdirSync(dir)
    .filter((file) => file.endsWith(".cpuprofile"))
    .map((file) => JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile);
  if (profiles.length === 0) return `No CPU profiles were written to ${dir}.`;
  const scenarios = [...new Set(windows.map((w) => w.scenario))];
  const lines = [`CPU profiles (${dir}): busy time during the measured windows on the system, per process.`];
  for (const scenario of scenarios) {
    const spans = windows.filter((w) => w.scenario === scenario);
    const seconds = spans.reduce((sum, w) => sum + (w.endUs - w.startUs), 0) / 1e6;
    lines.push("", `#### ${scenario} (${seconds.toFixed(0)} s measured)`, "");
    const tallies = profiles
      .map((profile) => ({ process: processOf(profile), tally: tally(profile, spans) }))
      .filter(({ tally }) => tally.busyUs > 0)
      .sort((a, b) => b.tally.busyUs - a.tally.busyUs);
    for (const { process, tally: t } of tallies) {
      lines.push(
        `- **${process}**: busy ${(t.busyUs / 1e6).toFixed(1)} s (${((t.busyUs / 1e6 / seconds) * 100).toFixed(0)}% of a core). ` +
          `By package: ${top(t.byCategory, t.busyUs, 10)}. ` +
          `Hottest functions (self): ${top(t.byFunction, t.busyUs, 8)}.`,
      );
    }
  }
  return lines.join("\n");
}
