/**
 * The system under test, one of two shapes behind one interface (`System`):
 *
 * - `single`: started as `pnpm start` runs it once built (`node apps/launcher/dist/cli.js`) on a
 *   fresh DATA_DIR, with its output in a log file (reading it here would take CPU from the load
 *   generator);
 * - `cluster`: `pnpm cluster up` (three NATS nodes, JetStream replicas 3, each service's replicas,
 *   each on a network namespace of its own, behind the launcher's balancer), stopped with
 *   `pnpm cluster down`.
 *
 * Also: the resident memory and CPU time of every process of the system, read from /proc (the
 * launcher, every process under it, and in a cluster every process in its namespaces: the three
 * nats-servers included).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@cheese/testing";
import { type ClusterInfo, monitorUrl } from "../../apps/cluster/src/cluster.ts";
import { bridgeAddress, hostsOwner } from "../../apps/launcher/src/hosts.ts";
import { launcherNodeOptions } from "../../apps/launcher/src/node-options.ts";
import { type NatsTraffic, readNatsTraffic } from "./nats-traffic.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The operator client every benchmark system knows: enterprise plan, every scope. */
export const BENCH_CLIENT = { id: "bench", secret: "bench-secret" };
/** The operator API key every benchmark system knows (the api_key operations: webhooks). */
export const BENCH_API_KEY = "bench-operator-key";

/** `single`: `pnpm start`'s shape on this host; `cluster`: `pnpm cluster up`'s. */
export type SystemKind = "single" | "cluster";

export interface System {
  kind: SystemKind;
  rootUrl: string;
  dataDir: string;
  logFile: string;
  /** From the start to the first 200 of GET /readyz (in a cluster: on every gateway). */
  readyMs: number;
  /** The address a webhook receiver on this host listens on for the system to reach it. */
  receiverHost: string;
  /** Memory and CPU of every process of the system, now. */
  usage(): TreeUsage;
  /**
   * The messages its nats-servers have carried so far, from their monitoring ports: a cluster's
   * only (the single host's nats-server serves no monitoring).
   */
  natsTraffic?: () => Promise<NatsTraffic>;
  /**
   * Below this much of a core over a second, the system counts as idle (`settle`): a fifth, or
   * half under `--cpu-prof`, whose samplers alone keep an idle system at ~0.36.
   */
  quietCores: number;
  stop(): Promise<void>;
}

export interface SystemOptions {
  kind: SystemKind;
  dataDir: string;
  replicas: number;
  env?: Record<string, string>;
  /** Node flags of the launcher, which every service process it starts inherits (`--cpu-prof`); single host only. */
  nodeArgs?: string[];
  /** How long /readyz may take (120 s; a long history to rebuild takes longer). */
  readyTimeoutMs?: number;
}

const quietCoresOf = (options: SystemOptions): number =>
  options.nodeArgs?.some((flag) => flag.startsWith("--cpu-prof")) ? 0.5 : 0.2;

/** What every benchmark system runs with: the bench's credentials, nothing throttled. */
function benchEnv(options: SystemOptions, port: number): Record<string, string> {
  return {
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
  };
}

export function startSystem(options: SystemOptions): Promise<System> {
  return options.kind === "cluster" ? startCluster(options) : startSingleHost(options);
}

async function startSingleHost(options: SystemOptions): Promise<System> {
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
      env: { ...process.env, NATS_URL: "", ...benchEnv(options, port) },
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
  const launcherPid = child.pid!;
  return {
    kind: "single",
    rootUrl,
    dataDir: options.dataDir,
    logFile,
    readyMs: performance.now() - started,
    receiverHost: "127.0.0.1",
    usage: () => processUsage(underPid(launcherPid)),
    quietCores: quietCoresOf(options),
    stop,
  };
}

/** The built `pnpm cluster` command. */
const clusterCli = join(repoRoot, "apps", "cluster", "dist", "cli.js");

/** Runs `pnpm cluster <args>` (built) with `env`; resolves with its stdout, rejects on a non-zero exit. */
function clusterCommand(
  args: string[],
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<string> {
  const child = spawn(process.execPath, [...nodeArgs, clusterCli, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) =>
    child.once("close", (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`pnpm cluster ${args.join(" ")} exited ${code}: ${stderr.trim()}`)),
    ),
  );
}

async function startCluster(options: SystemOptions): Promise<System> {
  const port = await freePort();
  const env = benchEnv(options, port);
  const started = performance.now();
  // `up` waits for /readyz itself (120 s); the cluster's own default, not readyTimeoutMs.
  const info = JSON.parse(await clusterCommand(["up", "--json"], env, options.nodeArgs)) as ClusterInfo;
  const readyMs = performance.now() - started;
  const launcherPid = hostsOwner()?.pid;
  if (launcherPid === undefined) throw new Error("the cluster is up but no launcher holds its hosts");
  const namespaces = [...info.nats.map((n) => n.netns), ...info.services.map((s) => s.netns)];
  const select = inCluster(launcherPid, namespaces);
  return {
    kind: "cluster",
    rootUrl: info.url,
    dataDir: info.dataDir,
    logFile: join(info.dataDir, "run", "cluster.log"),
    readyMs,
    receiverHost: bridgeAddress,
    usage: () => processUsage(select),
    natsTraffic: () => readNatsTraffic(info.nats.map(({ url }) => monitorUrl(url))),
    quietCores: quietCoresOf(options),
    stop: async () => {
      await clusterCommand(["down"], { DATA_DIR: info.dataDir });
    },
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

/** Memory and CPU of the processes of a system, per process label. */
export interface TreeUsage {
  /** Resident memory, bytes, all processes together. */
  rss: number;
  /** Per label (`nats-server`, `gateway`, `launcher`...): replicas of one label are summed. */
  byProcess: Record<string, { rss: number; cpuMs: number }>;
}

/** /proc's CPU times are in clock ticks: 100 a second on Linux. */
const TICK_MS = 10;

/** Which processes belong to a system, given a process and its parent's pid per pid. */
export type ProcessSelector = (pid: number, parentOf: ReadonlyMap<number, number>) => boolean;

/** `rootPid` and every process under it. */
export function underPid(rootPid: number): ProcessSelector {
  return (pid, parentOf) => {
    for (let p: number | undefined = pid, hops = 0; p && hops < 64; p = parentOf.get(p), hops++) {
      if (p === rootPid) return true;
    }
    return false;
  };
}

/**
 * The cluster's processes: the launcher and everything under it, and whatever runs in one of its
 * network namespaces (a process there is the cluster's whoever started it).
 */
function inCluster(launcherPid: number, namespaces: string[]): ProcessSelector {
  const under = underPid(launcherPid);
  const inodes = new Set<number>();
  for (const netns of namespaces) {
    try {
      inodes.add(statSync(`/run/netns/${netns}`).ino);
    } catch {
      // removed meanwhile
    }
  }
  return (pid, parentOf) => under(pid, parentOf) || inodes.has(netInode(pid));
}

/** The inode of a process's network namespace (`/proc/<pid>/ns/net` reads `net:[<inode>]`). */
function netInode(pid: number): number {
  try {
    return Number(/\[(\d+)\]/.exec(readlinkSync(`/proc/${pid}/ns/net`))?.[1] ?? -1);
  } catch {
    return -1;
  }
}

export function processUsage(select: ProcessSelector): TreeUsage {
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
  let rss = 0;
  const byProcess: TreeUsage["byProcess"] = {};
  for (const [pid, { comm, cpuMs }] of stats) {
    if (!select(pid, parentOf)) continue;
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
