import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { assertDataDirFree } from "@cheese/launcher/data-dir";
import { assertHostsPossible, existingNamespaces, hostsOwner, removeHosts } from "@cheese/launcher/hosts";
import { monitorSeedFile } from "@cheese/launcher/nats-identities";
import { launcherNodeOptions } from "@cheese/launcher/node-options";
import { ConfigError, replaceFile } from "@cheese/service-kit/launch";

/** What `pnpm cluster up --json` prints (and `faults` works from). */
export interface ClusterInfo {
  /** The launcher's balancer in front of the gateways, on this host. */
  url: string;
  nats: { name: string; netns: string; pid: number | null; url: string }[];
  /** `address`: the host's address on the bridge (a gateway listens on :8080 there). */
  services: { name: string; replica: number; netns: string; address: string; pid: number | null }[];
  dataDir: string;
  /**
   * The nkey seed file of the operators' NATS identity (`monitor`): it may read JetStream's stream
   * and consumer info and ask each service's health, nothing else (`nats --nkey <file>`).
   */
  natsCredentials: string;
}

/** The launcher `pnpm start` runs, built. */
const launcher = fileURLToPath(new URL("../../launcher/dist/cli.js", import.meta.url));
/** How long `up` waits for `/readyz`. */
const READY_TIMEOUT_MS = 120_000;
/** How long `down` lets the launcher stop everything before it is killed. */
const STOP_TIMEOUT_MS = 20_000;

/**
 * The variables of a cluster run: whatever the caller set (the same ones as `pnpm start`), over
 * the cluster's own defaults: three NATS nodes and two processes of every service, each on a host
 * of its own, JetStream data kept on three nodes.
 */
export function clusterEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return {
    REPLICAS: "2",
    NATS_REPLICAS: "3",
    GATEWAY_PORT: "8080",
    ...env,
    DATA_DIR: resolve(env.DATA_DIR || "./.data"),
    LAUNCH_MODE: "separate",
    LAUNCH_HOSTS: "netns",
    // `up` returns while the cluster runs: the launcher must not stop when `up` exits.
    LAUNCH_DETACHED: "true",
    NATS_URL: "",
  };
}

const stateFile = (dataDir: string) => join(dataDir, "run", "cluster.json");
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Starts the cluster in the background (the launcher with `LAUNCH_HOSTS=netns`, its output in
 * DATA_DIR/run/cluster.log) and resolves once `/readyz` is 200 through the balancer and on every
 * gateway replica, with where everything runs.
 * Refuses (ConfigError, exit 78) without root or `ip netns`, while anything holds DATA_DIR (a
 * cluster or a `pnpm start`: the launcher's DATA_DIR lock, data-dir.ts), or while a cluster on
 * another DATA_DIR holds the test hosts.
 */
export async function up(callerEnv: Record<string, string | undefined>): Promise<ClusterInfo> {
  // The launcher would refuse too, but only after `up` had spawned it: say so before anything starts.
  assertHostsPossible();
  const env = clusterEnv(callerEnv);
  const dataDir = env.DATA_DIR as string;
  assertDataDirFree(dataDir);
  const owner = hostsOwner();
  if (owner)
    throw new ConfigError(
      `a cluster already runs on DATA_DIR ${owner.dataDir} (launcher ${owner.pid}): one at a time (pnpm cluster down)`,
    );
  mkdirSync(join(dataDir, "run"), { recursive: true });
  const logFile = join(dataDir, "run", "cluster.log");
  const log = openSync(logFile, "w");
  // The launcher runs with the V8 options `pnpm start` gives it. A CPU profile asked of `up`
  // (`pnpm bench --cluster --profile` runs it with --cpu-prof) is asked of the launcher, whose
  // services inherit its flags; no other flag of `up`'s is passed.
  const profiling = process.execArgv.filter((flag) => flag.startsWith("--cpu-prof"));
  const child = spawn(process.execPath, [...launcherNodeOptions.split(" "), ...profiling, launcher], {
    env,
    detached: true,
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  child.unref();
  const pid = child.pid as number;
  const url = `http://127.0.0.1:${env.GATEWAY_PORT}`;
  replaceFile(stateFile(dataDir), JSON.stringify({ url, dataDir }));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!alive(pid) || child.exitCode !== null) {
      const code = child.exitCode ?? 1;
      const error = new Error(`the cluster's launcher exited (${code}):\n${tail(logFile)}`);
      throw code === 78 ? new ConfigError(error.message) : error;
    }
    if ((await ready(url)) && (await everyGatewayReady(dataDir))) break;
    if (Date.now() > deadline) {
      const jetStream = await jetStreamState(dataDir);
      await down(dataDir);
      throw new Error(
        `the cluster was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${tail(logFile)}\n` +
          `JetStream as each NATS node saw it:\n${jetStream}`,
      );
    }
    await new Promise((next) => setTimeout(next, 250));
  }
  return info(dataDir);
}

/** Where everything of the running cluster on DATA_DIR runs now (pids change as processes restart). */
export function info(dataDir: string): ClusterInfo {
  const state = readState(dataDir);
  if (!state) throw new Error(`no cluster on DATA_DIR ${dataDir}`);
  const processes = JSON.parse(readFileSync(join(dataDir, "run", "processes.json"), "utf8")) as {
    nats: ClusterInfo["nats"];
    instances: { services: string[]; replica: number; netns: string; address: string; pid: number | null }[];
  };
  return {
    url: state.url,
    nats: processes.nats,
    services: processes.instances.map(({ services, replica, netns, address, pid }) => ({
      name: services.join("+"),
      replica,
      netns,
      address,
      pid,
    })),
    dataDir,
    natsCredentials: monitorSeedFile(dataDir),
  };
}

/**
 * Stops the cluster on DATA_DIR: SIGTERM to its launcher (the owner of the hosts), which stops
 * every process and removes the hosts; a launcher still running after STOP_TIMEOUT_MS is killed,
 * and whatever it left (processes in the namespaces, the namespaces) is removed. Safe to run when
 * nothing runs; refuses (exit 78) while the hosts belong to a cluster on another DATA_DIR.
 */
export async function down(dataDir: string): Promise<void> {
  const owner = hostsOwner();
  if (owner && resolve(owner.dataDir) !== resolve(dataDir)) {
    throw new ConfigError(
      `the running cluster is on DATA_DIR ${owner.dataDir}, not ${dataDir}: DATA_DIR=${owner.dataDir} pnpm cluster down`,
    );
  }
  if (owner) {
    process.kill(owner.pid, "SIGTERM");
    const deadline = Date.now() + STOP_TIMEOUT_MS;
    while (alive(owner.pid) && Date.now() < deadline) await new Promise((next) => setTimeout(next, 100));
    if (alive(owner.pid)) process.kill(-owner.pid, "SIGKILL");
  }
  // A launcher killed outright leaves its namespaces and maybe their processes.
  for (const netns of existingNamespaces()) {
    const pids = spawnSync("ip", ["netns", "pids", netns], { encoding: "utf8" }).stdout.split("\n");
    for (const pid of pids.filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone already
      }
    }
  }
  removeHosts();
  if (existsSync(stateFile(dataDir))) rmSync(stateFile(dataDir));
}

function readState(dataDir: string): { url: string } | undefined {
  try {
    return JSON.parse(readFileSync(stateFile(dataDir), "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Every gateway replica answers `/readyz` 200 on its own address. Each asks the services over the
 * NATS node it is connected to, which learns of their subscriptions over the routes a moment after
 * the node the balancer's gateway uses: until then a request there finds no responder (a 503).
 */
async function everyGatewayReady(dataDir: string): Promise<boolean> {
  let gateways: string[];
  try {
    gateways = info(dataDir)
      .services.filter(({ name }) => name === "gateway")
      .map(({ address }) => `http://${address}:8080`);
  } catch {
    return false;
  }
  return gateways.length > 0 && (await Promise.all(gateways.map(ready))).every(Boolean);
}

async function ready(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

/** A NATS node's monitoring address (`/healthz`, `/jsz`, `/routez`), from its client URL. */
export function monitorUrl(natsUrl: string): string {
  return natsUrl.replace(/^nats:/, "http:").replace(/:4222$/, ":8222");
}

/** A node's monitor asked `path`, for 2 s at most. */
function askMonitor(natsUrl: string, path: string): Promise<Response> {
  return fetch(`${monitorUrl(natsUrl)}${path}`, { signal: AbortSignal.timeout(2000) });
}

/** Each service replica (`catalogue#1`) by its host's address, the client address a node sees. */
function replicasByAddress(services: ClusterInfo["services"]): Map<string, string> {
  return new Map(services.map(({ name, replica, address }) => [address, `${name}#${replica}`]));
}

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number };
  account_details?: {
    stream_detail?: {
      name: string;
      cluster?: {
        leader?: string;
        replicas?: { name: string; current: boolean; offline?: boolean; lag?: number }[];
      };
      consumer_detail?: {
        name: string;
        delivered?: { stream_seq: number };
        ack_floor?: { stream_seq: number };
        num_ack_pending?: number;
        num_redelivered?: number;
        num_pending?: number;
        cluster?: { leader?: string };
      }[];
    }[];
  }[];
}

/**
 * What each NATS node of the cluster says of JetStream (its `/healthz`, `/jsz` and `/routez`): the
 * meta leader, the nodes it has routes to, and each stream's leader and peers (the other nodes
 * keeping it, as this node sees them: offline, or behind by so many operations), so a start that
 * never gets ready says whether the meta group or one stream's group has no leader, on which
 * nodes, and whether a route is missing. Under the node leading them, each durable's place: the
 * last event delivered and the ack floor (stream sequences), how many await an ack, how many were
 * redelivered, how many are left (a webhook that never arrived shows whether its event was passed).
 */
export async function jetStreamState(dataDir: string): Promise<string> {
  let nodes: ClusterInfo["nats"];
  try {
    nodes = info(dataDir).nats;
  } catch (error) {
    return `  (no processes.json to find the nodes: ${(error as Error).message})`;
  }
  const nodeAt = new Map(nodes.map(({ name, url }) => [new URL(url).hostname, name]));
  const lines = await Promise.all(
    nodes.map(async ({ name, url }) => {
      const get = async (path: string) => {
        const response = await askMonitor(url, path);
        return { status: response.status, body: await response.text() };
      };
      try {
        const health = await get("/healthz");
        const jsz = JSON.parse((await get("/jsz?accounts=true&streams=true&consumers=true")).body) as Jsz;
        const routez = JSON.parse((await get("/routez")).body) as { routes?: { ip: string }[] };
        const routes = [...new Set((routez.routes ?? []).map(({ ip }) => nodeAt.get(ip) ?? ip))].sort();
        const streams = (jsz.account_details ?? []).flatMap(({ stream_detail = [] }) =>
          stream_detail.flatMap(({ name: stream, cluster, consumer_detail = [] }) => {
            const replicas = (cluster?.replicas ?? [])
              .map((r) => `${r.name}${r.offline ? " offline" : r.current ? "" : ` behind ${r.lag ?? "?"}`}`)
              .join(", ");
            const durables = consumer_detail
              .filter((consumer) => consumer.cluster?.leader === name)
              .map(
                (c) =>
                  `      durable ${c.name}: delivered ${c.delivered?.stream_seq ?? "?"}, ack floor ${c.ack_floor?.stream_seq ?? "?"}, awaiting ack ${c.num_ack_pending ?? "?"}, redelivered ${c.num_redelivered ?? "?"}, left ${c.num_pending ?? "?"}`,
              );
            return [
              `    ${stream}: leader ${cluster?.leader ?? "none"}; peers ${replicas || "none"}`,
              ...durables,
            ];
          }),
        );
        return [
          `  ${name}: /healthz ${health.status} ${health.body.trim()}; meta leader ${jsz.meta_cluster?.leader ?? "none"} of ${jsz.meta_cluster?.cluster_size ?? "?"}; routes to ${routes.join(", ") || "none"}`,
          ...streams,
        ].join("\n");
      } catch (error) {
        return `  ${name}: no answer from ${monitorUrl(url)} (${(error as Error).message})`;
      }
    }),
  );
  return lines.join("\n");
}

/**
 * What depends on one NATS node, asked of its monitor: the service replicas connected to it (by
 * their host's address) and the JetStream streams and consumers (durable or not) it leads, e.g.
 * "clients catalogue#1, gateway#2; leads 3 of 9 streams, 5 of 14 consumers": what a fault of
 * that node can cost is set against it (docs/operations.md, "Where the 503s fall").
 */
export async function dependents(dataDir: string, nodeName: string): Promise<string> {
  const { nats, services } = info(dataDir);
  const node = nats.find(({ name }) => name === nodeName);
  if (!node) return `no node ${nodeName}`;
  const get = async <T>(path: string) => (await (await askMonitor(node.url, path)).json()) as T;
  try {
    const connz = await get<{ connections?: { ip: string; name?: string }[] }>("/connz?limit=4096");
    const replicaAt = replicasByAddress(services);
    const clients = (connz.connections ?? [])
      .map(({ ip, name }) => replicaAt.get(ip) ?? `${name ?? "?"} at ${ip}`)
      .sort();
    const jsz = await get<Jsz>("/jsz?accounts=true&streams=true&consumers=true");
    const streams = (jsz.account_details ?? []).flatMap(({ stream_detail = [] }) => stream_detail);
    const consumers = streams.flatMap(({ consumer_detail = [] }) => consumer_detail);
    const led = (assets: { cluster?: { leader?: string } }[]) =>
      assets.filter(({ cluster }) => cluster?.leader === nodeName).length;
    return (
      `clients ${clients.join(", ") || "none"}; ` +
      `leads ${led(streams)} of ${streams.length} streams, ${led(consumers)} of ${consumers.length} consumers`
    );
  } catch (error) {
    return `no answer from ${monitorUrl(node.url)} (${(error as Error).message})`;
  }
}

/**
 * The service replicas' NATS connections each node closed since `since` (ms since the epoch), with
 * the reason it gave, asked of the nodes' monitors (`/connz?state=closed`): "ordering#1 on nats-3:
 * Slow Consumer (Write Deadline)". A client that reconnects has had its connection closed by the
 * server (a slow consumer, a stale connection) or has given it up (the server seen as gone: then
 * the node closes it later, "Client Closed" or a read error). A node killed meanwhile has
 * forgotten its own.
 */
export async function closedSince(dataDir: string, since: number): Promise<string[]> {
  const { nats, services } = info(dataDir);
  const replicaAt = replicasByAddress(services);
  const perNode = await Promise.all(
    nats.map(async ({ name, url }) => {
      try {
        const answer = await askMonitor(url, "/connz?state=closed&limit=4096");
        const { connections = [] } = (await answer.json()) as {
          connections?: { ip: string; stop?: string; reason?: string }[];
        };
        return connections
          .filter(({ ip, stop }) => replicaAt.has(ip) && stop !== undefined && Date.parse(stop) >= since)
          .map(({ ip, reason }) => `${replicaAt.get(ip)} on ${name}: ${reason ?? "no reason given"}`);
      } catch {
        return [];
      }
    }),
  );
  return perNode.flat().sort();
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-40).join("\n");
  } catch {
    return "";
  }
}
