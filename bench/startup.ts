/**
 * Start-up time: `pnpm start` on an empty DATA_DIR, from the command to the first 200 of the
 * gateway's /readyz (every service reachable), then SIGTERM. RUNS times (default 5); prints each
 * run, the median and the machine's load. Numbers for comparing changes on the same machine.
 *
 *   pnpm bench:startup            RUNS=10 pnpm bench:startup
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, processAlive, tempDir } from "@cheese/testing";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const runs = Number(process.env.RUNS ?? "5");
// pnpm's own CLI when run through pnpm, else the one on PATH.
const execPath = process.env.npm_execpath;
const pnpm = execPath && /pnpm/.test(execPath) ? [process.execPath, execPath] : ["pnpm"];

async function once(): Promise<number> {
  const port = await freePort();
  const data = tempDir("startup");
  const started = performance.now();
  const [file, ...args] = [...pnpm, "start"];
  const child = spawn(file!, args, {
    cwd: repoRoot,
    env: { ...process.env, NATS_URL: "", LOG_LEVEL: "warn", GATEWAY_PORT: String(port), DATA_DIR: data.path },
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`pnpm start exited with ${child.exitCode}`);
      try {
        const response = await fetch(`http://127.0.0.1:${port}/readyz`);
        if (response.status === 200) return performance.now() - started;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  } finally {
    child.kill("SIGTERM");
    await exited;
    // The launcher notices pnpm is gone and stops the services: wait for them to exit.
    const file = join(data.path, "run", "processes.json");
    const pids: number[] = existsSync(file)
      ? Object.values(JSON.parse(readFileSync(file, "utf8")).processes as Record<string, number[]>).flat()
      : [];
    while (pids.some(processAlive)) await new Promise((resolve) => setTimeout(resolve, 50));
    data.remove();
  }
}

const load = loadavg().map((l) => l.toFixed(1));
const times: number[] = [];
for (let i = 0; i < runs; i++) {
  const ms = await once();
  times.push(ms);
  console.log(`run ${i + 1}: /readyz 200 after ${(ms / 1000).toFixed(2)} s`);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)]!;
console.log(
  `pnpm start to /readyz 200, empty DATA_DIR: median ${(median / 1000).toFixed(2)} s ` +
    `(min ${(times[0]! / 1000).toFixed(2)}, max ${(times.at(-1)! / 1000).toFixed(2)}; ` +
    `${runs} runs; load average before ${load.join(" ")})`,
);
