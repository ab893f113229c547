/**
 * The system under test, started as `pnpm start` runs it once built (`node
 * apps/launcher/dist/cli.js`) on a fresh DATA_DIR, with its output in a log file (reading it
 * here would take CPU from the load generator). Also: the resident memory of the launcher and
 * every process under it, nats-server included.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@cheese/testing";
import { launcherNodeOptions } from "../../apps/launcher/src/node-options.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The operator client every benchmark system knows: enterprise plan, every scope. */
export const BENCH_CLIENT = { id: "bench", secret: "bench-secret" };
/** The operator API key every benchmark system knows (the api_key operations: webhooks). */
export const BENCH_API_KEY = "bench-operator-key";

export interface StartedSystem {
  rootUrl: string;
  dataDir: string;
  logFile: string;
  launcherPid: number;
  /** From the spawn to the first 200 of GET /readyz. */
  readyMs: number;
  stop(): Promise<void>;
}

export async function startBenchSystem(options: {
  dataDir: string;
  replicas: number;
  env?: Record<string, string>;
  /** Node flags of the launcher, which every service process it starts inherits (`--cpu-prof`). */
  nodeArgs?: string[];
  /** How long /readyz may take (120 s; a long history to rebuild takes longer). */
  readyTimeoutMs?: number;
}): Promise<StartedSystem> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  const port = await freePort();
  const logFile = join(options.dataDir, "..", `${options.dataDir.split("/").at(-1)}.log`);
  const log = openSync(logFile, "a");
  const started = performance.now();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...launcherNodeOptions.split(" "),
      ...(options.nodeArgs ?? []),
      join(repoRoot, "apps", "launcher", "dist", "cli.js"),
    ],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        NATS_URL: "",
        REPLICAS: String(options.replicas),
        OAUTH_CLIENTS: JSON.stringify([
          {
            ...BENCH_CLIENT,
            scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
            plan: "enterprise",
          },
        ]),
        API_KEYS: `${BENCH_API_KEY}:enterprise`,
        // Nothing throttled: the limiter still runs, its buckets just never empty.
        RATE_LIMIT_PLANS: "free=1000000/unlimited,pro=1000000/unlimited,enterprise=1000000/unlimited",
        ANON_PLAN: "enterprise",
        ...options.env,
        GATEWAY_PORT: String(port),
        DATA_DIR: options.dataDir,
      },
      stdio: ["ignore", log, log],
    },
  );
  closeSync(log);
  const rootUrl = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  };
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`the launcher exited with ${child.exitCode}; see ${logFile}`);
    if (performance.now() - started > readyTimeoutMs) {
      await stop();
      throw new Error(`not ready within ${readyTimeoutMs / 1000} s; see ${logFile}`);
    }
    try {
      const response = await fetch(`${rootUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    rootUrl,
    dataDir: options.dataDir,
    logFile,
    launcherPid: child.pid!,
    readyMs: performance.now() - started,
    stop,
  };
}

/** A client-credentials token of the bench client. */
export async function benchToken(rootUrl: string): Promise<string> {
  const response = await fetch(`${rootUrl}/oauth/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${BENCH_CLIENT.id}:${BENCH_CLIENT.secret}`).toString("base64")}`,
    },
    body: "grant_type=client_credentials",
  });
  if (response.status !== 200) throw new Error(`token: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** Memory and CPU of the launcher and every process under it, per process label. */
export interface TreeUsage {
  /** Resident memory, bytes, all processes together. */
  rss: number;
  byProcess: Record<string, { rss: number; cpuMs: number }>;
}

/** /proc's CPU times are in clock ticks: 100 a second on Linux. */
const TICK_MS = 10;

export function treeUsage(rootPid: number): TreeUsage {
  const parentOf = new Map<number, number>();
  const stats = new Map<number, { comm: string; cpuMs: number }>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // pid (comm) state ppid ... utime stime (fields 14 and 15); comm may hold spaces.
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      parentOf.set(pid, Number(fields[1]));
      stats.set(pid, {
        comm: stat.slice(stat.indexOf("(") + 1, close),
        cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS,
      });
    } catch {
      // gone meanwhile
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p && hops < 64; p = parentOf.get(p), hops++) {
      if (p === rootPid) return true;
    }
    return false;
  };
  let rss = 0;
  const byProcess: TreeUsage["byProcess"] = {};
  for (const [pid, { comm, cpuMs }] of stats) {
    if (!inTree(pid)) continue;
    const memory = rssOf(pid);
    rss += memory;
    const label = processLabel(pid, comm);
    const entry = byProcess[label] ?? { rss: 0, cpuMs: 0 };
    byProcess[label] = { rss: entry.rss + memory, cpuMs: entry.cpuMs + cpuMs };
  }
  return { rss, byProcess };
}

function rssOf(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** `nats-server`, or the service a node process runs (its SERVICE variable), or `launcher`. */
function processLabel(pid: number, comm: string): string {
  if (comm !== "node") return comm;
  try {
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const service = environ.find((v) => v.startsWith("SERVICE="))?.slice("SERVICE=".length);
    return service || "launcher";
  } catch {
    return "node";
  }
}
