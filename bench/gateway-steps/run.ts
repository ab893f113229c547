/**
 * The gateway's per-request cost, layer by layer (docs/performance.md, "The gateway's
 * per-request cost, step by step"): one server per step (`server.ts`), each adding one layer
 * of the gateway's request path to a route answering a cheese's JSON from memory, loaded in
 * turn with the bench's load generator at 32 connections (the bench's get: a client-credentials
 * bearer token). Prints CPU µs per 2xx answer of each server's process, from /proc, per round.
 *
 *   pnpm exec tsx --conditions=source bench/gateway-steps/run.ts [--seconds=5] [--rounds=2] [--steps=0,2,9]
 *     [--profile=DIR] [--against=DIR] [--create]
 *
 * `--against=DIR`: each step's server also from the checkout in DIR (another worktree, with its
 * dependencies installed), the two loaded at the same time, 16 connections each, so both see the
 * same neighbours; per round, this checkout's CPU per answer, DIR's, and their ratio.
 *
 * `--create`: step 9 (`createApp`) answering `POST /v2/cheeses` (the catalogue's reply from
 * memory) instead of the get: what a create costs the gateway itself, its body's checks included.
 *
 * `--in-process[=GETS]`: no load generator and no sockets: each server is handed GETS gets
 * (default 2,000) one after the other as Node's parser would hand them (`server.ts`), `--bursts`
 * times per round (default 10), with `--against` alternating with DIR's server burst by burst;
 * per round, the median CPU µs per get (from `process.cpuUsage`) and, against DIR, the median of
 * the bursts' ratios. On a loaded machine the load generator and the scheduling of sockets swing
 * a get's CPU by a third between windows; this leaves the gateway's own path, interleaved finely
 * enough that both checkouts see the same neighbours.
 */
import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runLoad } from "../harness/load.ts";
import { newCheese } from "../scenarios/cheeses.ts";

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const seconds = Number(arg("seconds", "5"));
const rounds = Number(arg("rounds", "2"));
const steps = arg("steps", process.argv.includes("--create") ? "9" : "11,0,10,1,2,3,4,5,6,7,8,9")
  .split(",")
  .map(Number);
/** `--profile=DIR`: each server writes a V8 CPU profile there when it stops. */
const profileDir = arg("profile", "");
/** `--against=DIR`: the checkout the servers are compared with, loaded beside them. */
const against = arg("against", "");
/** `--create`: creates (step 9 only). */
const create = process.argv.includes("--create");
/** `--in-process[=GETS]`: gets handed to each server in process, GETS a burst. */
const inProcess = process.argv.some((a) => a === "--in-process" || a.startsWith("--in-process="));
const burstGets = Number(arg("in-process", "2000"));
const bursts = Number(arg("bursts", "10"));
if (inProcess && create) throw new Error("--in-process hands gets only, not creates");

/** A create's body, as the bench's `POST /v2/cheeses` sends one. */
const NEW_CHEESE = JSON.stringify(newCheese(1, "Bench"));

interface Server {
  step: number;
  child: ChildProcess;
  port: number;
  token: string;
  layers: string[];
}

async function start(step: number, checkout?: string): Promise<Server> {
  const script = checkout
    ? join(checkout, "bench/gateway-steps/server.ts")
    : fileURLToPath(new URL("./server.ts", import.meta.url));
  const child = fork(script, {
    ...(checkout ? { cwd: checkout } : {}),
    execArgv: [...process.execArgv, ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [])],
    env: {
      ...process.env,
      STEP: String(step),
      ...(create ? { ROUTE: "create" } : {}),
      ...(inProcess ? { IN_PROCESS: "1" } : {}),
    },
    // The access lines go where a process's discarded output goes: written, not kept.
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const ready = await new Promise<{ port: number; token: string; layers: string[] }>((resolve, reject) => {
    child.once("message", (message) => resolve(message as never));
    child.once("exit", (code) => reject(new Error(`step ${step} exited (${code})`)));
  });
  return { step, child, ...ready };
}

/** CPU seconds the process has used (user + system), from /proc (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measure(
  server: Server,
  connections = 32,
): Promise<{ us: number; perSecond: number; p99: number }> {
  const load = (window: number) =>
    runLoad({
      url: `http://127.0.0.1:${server.port}`,
      connections,
      seconds: window,
      next: create
        ? () => ({
            method: "POST",
            path: "/v2/cheeses",
            body: NEW_CHEESE,
            headers: { authorization: `Bearer ${server.token}` },
          })
        : () => ({
            method: "GET",
            path: "/v2/cheeses/5",
            headers: { authorization: `Bearer ${server.token}` },
          }),
    });
  await load(2);
  const before = cpuSeconds(server.child.pid!);
  const result = await load(seconds);
  const used = cpuSeconds(server.child.pid!) - before;
  if (result.ok === 0 || Object.keys(result.non2xx).length > 0) {
    throw new Error(`step ${server.step}: ${result.ok} 2xx, others ${JSON.stringify(result.non2xx)}`);
  }
  return { us: (used * 1e6) / result.ok, perSecond: result.okPerSecond, p99: result.p99 };
}

/** CPU µs per get of a burst of gets handed to the server in process (`--in-process`). */
function burst(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    const exited = (code: number | null) => reject(new Error(`step ${server.step} exited (${code})`));
    server.child.once("exit", exited);
    server.child.once("message", (message: { usPerGet: number }) => {
      server.child.off("exit", exited);
      resolve(message.usPerGet);
    });
    server.child.send({ gets: burstGets });
  });
}

/** Every burst's ratio to the compared server's, over the rounds. */
const allRatios: number[] = [];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** One round of `--in-process`: the bursts, alternating with the compared server's when there is one. */
async function inProcessRound(server: Server, other: Server | undefined): Promise<string> {
  const mine: number[] = [];
  const theirs: number[] = [];
  for (let i = 0; i < bursts; i++) {
    if (!other) mine.push(await burst(server));
    else if (i % 2 === 0) {
      mine.push(await burst(server));
      theirs.push(await burst(other));
    } else {
      theirs.push(await burst(other));
      mine.push(await burst(server));
    }
  }
  if (!other) return `${median(mine).toFixed(1)} µs (median of ${bursts} bursts)`;
  const ratios = mine.map((us, i) => us / theirs[i]!);
  allRatios.push(...ratios);
  return `${median(mine).toFixed(1)} µs against ${median(theirs).toFixed(1)} (${median(ratios).toFixed(3)}, bursts ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
}

const servers: Server[] = [];
const compared = new Map<Server, Server>();
for (const step of steps) {
  const server = await start(step);
  servers.push(server);
  if (against) compared.set(server, await start(step, against));
}
const results = new Map<number, string[]>();
const loads: number[] = [];
try {
  // Warmed up first, unmeasured, as the load generator's windows are.
  if (inProcess) for (const server of [...servers, ...compared.values()]) await burst(server);
  for (let round = 0; round < rounds; round++) {
    for (const server of servers) {
      loads.push(loadavg()[0]!);
      const other = compared.get(server);
      let cell: string;
      if (inProcess) cell = await inProcessRound(server, other);
      else if (other) {
        const [mine, theirs] = await Promise.all([measure(server, 16), measure(other, 16)]);
        cell = `${mine.us.toFixed(1)} µs against ${theirs.us.toFixed(1)} (${(mine.us / theirs.us).toFixed(2)})`;
      } else {
        const { us, perSecond, p99 } = await measure(server);
        cell = `${us.toFixed(1)} µs (${Math.round(perSecond)}/s, p99 ${p99.toFixed(1)} ms)`;
      }
      const cells = results.get(server.step) ?? [];
      cells.push(cell);
      results.set(server.step, cells);
      process.stderr.write(`step ${server.step} round ${round + 1}: ${cell}\n`);
    }
  }
} finally {
  // A server leaves when its channel closes: its profile is written on that exit.
  for (const server of [...servers, ...compared.values()]) server.child.disconnect();
}
const layers = servers[0]!.layers;
console.log(`| step | layer added | ${[...Array(rounds).keys()].map((r) => `round ${r + 1}`).join(" | ")} |`);
console.log(`| ---- | ----------- | ${[...Array(rounds).keys()].map(() => "---").join(" | ")} |`);
for (const step of steps) {
  console.log(`| ${step} | ${layers[step]} | ${results.get(step)!.join(" | ")} |`);
}
if (allRatios.length > 0) {
  const sorted = [...allRatios].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.floor(q * (sorted.length - 1))]!.toFixed(3);
  console.log(
    `\nall ${sorted.length} bursts against ${against}: median ratio ${at(0.5)}, quartiles ${at(0.25)}–${at(0.75)}`,
  );
}
console.log(
  `\nload average (1 min) ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}, ${
    inProcess ? `${bursts} bursts of ${burstGets} gets in process` : `${seconds} s windows`
  }`,
);
