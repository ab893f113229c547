import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freeListenPort } from "@cheese/service-kit/launch";

/** How long a nats-server may take to say it is ready before it is stopped and the start fails. */
const READY_TIMEOUT_MS = 10_000;

/** The executable `name` on PATH, or undefined. */
function onPath(name: string): string | undefined {
  const found = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : undefined;
}

/** The nats-server on PATH, or undefined. */
export function findNatsServer(): string | undefined {
  return onPath("nats-server");
}

/**
 * util-linux's setpriv (Linux), through which nats-server is started with a parent-death signal,
 * or undefined where there is none.
 */
const setpriv = process.platform === "linux" ? onPath("setpriv") : undefined;

/**
 * GOMAXPROCS for each nats-server the launcher starts, when the environment does not set one: its
 * share of the machine's cores, `cores / processes` (the nats-servers and the services' processes
 * the launcher starts, which share them), at least 1. Go sizes its scheduler to every core it
 * sees: with more Ps than the server's share, a goroutine woken by a message (several per message)
 * sets an idle P's thread spinning for work, on cores the services need. On the 2-core machine,
 * where this is 1, that was 12-17 % of the nats-servers' CPU per order below saturation, single
 * host and cluster alike (docs/performance.md, "NATS").
 */
export function natsServerProcs(
  processes: number,
  cores = availableParallelism(),
  env: NodeJS.ProcessEnv = process.env,
): string {
  return env.GOMAXPROCS || String(Math.max(1, Math.floor(cores / processes)));
}

interface NatsServerOptions {
  /** Its GOMAXPROCS (`natsServerProcs`). */
  procs: string;
  host: string;
  port: number;
  storeDir: string;
  /** Its configuration file (see `LAME_DUCK`). */
  configFile: string;
  /** A node of a cluster: its name and routes (see `startNatsCluster`). */
  cluster?: { name: string; routes: string[] };
  /** The command prefix that runs it on its host (a network namespace), if not this one. */
  exec?: string[];
}

/**
 * nats-server's lame-duck mode, which it enters on SIGUSR2 (its parent-death signal, below): it
 * takes no new client, lets the ones it has leave for `lame_duck_grace_period`, then closes the
 * rest and exits (at once when none is left). A launcher killed outright leaves its services
 * stopping too (their IPC channel closed): they drain their NATS connections in that time, as
 * on an orderly stop, instead of waiting out their deadline on a server that went with the
 * launcher. 30 s is the least duration nats-server accepts; it closes a service still connected
 * after the grace period within it.
 */
const LAME_DUCK = 'lame_duck_grace_period: "3s"\nlame_duck_duration: "30s"\n';

export interface RunningNats {
  /** `nats-server`, or the node's name in a cluster (`nats-1`). */
  name: string;
  url: string;
  process: ChildProcess;
  /** Starts the same nats-server again (same address, same JetStream store) after it died. */
  respawn(): ChildProcess;
  /** The network namespace it runs in, if not the launcher's. */
  netns?: string;
}

/**
 * Starts nats-server with JetStream on a free loopback port, never one of `avoid` (the
 * `GATEWAY_PORT` the launcher was given, not bound yet), its data under DATA_DIR/nats.
 */
export async function startNatsServer(
  binary: string,
  dataDir: string,
  authorization: string,
  procs: string,
  avoid: readonly number[] = [],
): Promise<RunningNats> {
  const port = await freeListenPort("127.0.0.1", { avoid });
  const storeDir = resolve(join(dataDir, "nats"));
  mkdirSync(storeDir, { recursive: true });
  const options = {
    procs,
    host: "127.0.0.1",
    port,
    storeDir,
    configFile: writeConfig(dataDir, "nats-server.conf", authorization),
  };
  const child = await runNatsServer(binary, options);
  return {
    name: "nats-server",
    url: `nats://127.0.0.1:${port}`,
    process: child,
    respawn: () => spawnNatsServer(binary, options),
  };
}

/** Client, route and monitoring ports of a cluster node (each node has a host of its own). */
const CLIENT_PORT = 4222;
const ROUTE_PORT = 6222;
const MONITOR_PORT = 8222;
/** How long a cluster may take to elect its JetStream meta leader once every node is up. */
const CLUSTER_READY_TIMEOUT_MS = 30_000;

/**
 * Starts a JetStream cluster, one nats-server per host (`LAUNCH_HOSTS=netns`): each node listens on
 * its host's address, routes to every other node, keeps its store under DATA_DIR/nats/<name>, and
 * serves monitoring on :8222. Resolves once every node says it is ready and answers `/healthz`
 * (JetStream current: a meta leader elected), so services that create streams at start find one.
 */
export async function startNatsCluster(
  binary: string,
  dataDir: string,
  authorization: string,
  procs: string,
  nodes: { name: string; address: string; netns: string; exec: string[] }[],
): Promise<RunningNats[]> {
  const routes = nodes.map(({ address }) => `nats://${address}:${ROUTE_PORT}`);
  const configFile = writeConfig(dataDir, "nats-cluster.conf", CLUSTER_PINGS + authorization);
  const started = await Promise.all(
    nodes.map(async ({ name, address, netns, exec }) => {
      const storeDir = resolve(join(dataDir, "nats", name));
      mkdirSync(storeDir, { recursive: true });
      const options: NatsServerOptions = {
        procs,
        host: address,
        port: CLIENT_PORT,
        storeDir,
        configFile,
        cluster: { name, routes: routes.filter((route) => !route.includes(`//${address}:`)) },
        exec,
      };
      const child = await runNatsServer(binary, options);
      return {
        name,
        netns,
        url: `nats://${address}:${CLIENT_PORT}`,
        process: child,
        respawn: () => spawnNatsServer(binary, options),
      };
    }),
  );
  const deadline = Date.now() + CLUSTER_READY_TIMEOUT_MS;
  for (const { address } of nodes) {
    while (!(await healthy(`http://${address}:${MONITOR_PORT}/healthz`))) {
      if (Date.now() > deadline) {
        for (const node of started) node.process.kill("SIGKILL");
        throw new Error(
          `the NATS cluster elected no JetStream leader within ${CLUSTER_READY_TIMEOUT_MS / 1000} s`,
        );
      }
      await new Promise((next) => setTimeout(next, 200));
    }
  }
  return started;
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

/**
 * A cluster node PINGs its routes and clients every 2 s and drops one that leaves 3 unanswered:
 * a node cut off (no FIN, no RST) is out of the others' interest within ~6-8 s, so requests stop
 * going to the services behind it, and its routes are rebuilt at once when it heals instead of
 * waiting out TCP's retransmission back-off. nats-server's default (2 min, 2 PINGs) keeps sending
 * to a silent node for up to 4 min.
 */
const CLUSTER_PINGS = 'ping_interval: "2s"\nping_max: 3\n';

/**
 * The configuration file a nats-server the launcher starts reads (see `LAME_DUCK`), with `extra`:
 * the `authorization` block of the identities (public keys only: no secret in this file), which
 * covers clients; the routes between the nodes of a cluster are not authenticated (each node
 * listens for routes on its own host's address on the launcher's private bridge).
 */
function writeConfig(dataDir: string, name: string, extra: string): string {
  const configFile = resolve(join(dataDir, "run", name));
  mkdirSync(dirname(configFile), { recursive: true });
  writeFileSync(configFile, LAME_DUCK + extra);
  return configFile;
}

/**
 * Runs nats-server with JetStream at `host:port` on the store `storeDir` and resolves once it
 * says it is ready; one that exits first or is not ready within 10 s is stopped, and the promise
 * rejects with what it printed.
 */
async function runNatsServer(binary: string, options: NatsServerOptions): Promise<ChildProcess> {
  const child = spawnNatsServer(binary, options);
  await new Promise<void>((ready, fail) => {
    let output = "";
    const settle = (error?: Error) => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      if (!error) return ready();
      // Not left running behind a failed start.
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      fail(error);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Server is ready")) settle();
    };
    const onExit = (code: number | null) => settle(new Error(`nats-server exited with ${code}:\n${output}`));
    const timer = setTimeout(
      () => settle(new Error(`nats-server not ready after ${READY_TIMEOUT_MS / 1000} s:\n${output}`)),
      READY_TIMEOUT_MS,
    );
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
  });
  return child;
}

/**
 * Spawns nats-server with JetStream at `host:port` on the store `storeDir`, in a process group of
 * its own: a Ctrl-C reaches the launcher, which stops the services before NATS. Through setpriv
 * it gets SIGUSR2 (lame duck, then exit: see `LAME_DUCK`) when the process that started it
 * dies, however it died (SIGKILL, a crash, a signal before its handlers were set), so no
 * nats-server outlives its launcher. Its output is read (a full pipe would block it); what it
 * prints is the caller's to use or drop. `ip netns exec` and setpriv pass its environment on.
 */
function spawnNatsServer(
  binary: string,
  { procs, host, port, storeDir, configFile, cluster, exec = [] }: NatsServerOptions,
): ChildProcess {
  const args = ["-c", configFile, "-a", host, "-p", String(port), "-js", "-sd", storeDir];
  if (cluster) {
    args.push("-n", cluster.name, "--cluster_name", "cheese", "-m", String(MONITOR_PORT));
    args.push("--cluster", `nats://${host}:${ROUTE_PORT}`, "--routes", cluster.routes.join(","));
  }
  const command = setpriv ? [setpriv, "--pdeathsig", "SIGUSR2", "--", binary, ...args] : [binary, ...args];
  const [file, ...argv] = [...exec, ...command] as [string, ...string[]];
  const child = spawn(file, argv, {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, GOMAXPROCS: procs },
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return child;
}
