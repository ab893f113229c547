import { createServer } from "node:net";
import { resolve } from "node:path";
import { authorizationConfig } from "@cheese/messaging/permissions";
import {
  CONFIG_EXIT_CODE,
  ConfigError,
  createLogger,
  freeListenPort,
  portInUse,
  runAsProcess,
} from "@cheese/service-kit/launch";
import { backendProcesses, checkConfiguration, layoutMessage, serviceNames } from "./config.ts";
import { previousProcessesGone, takeDataDir } from "./data-dir.ts";
import {
  credentialsEnv,
  developmentCredentials,
  firstRunBanner,
  noCredentialsConfigured,
} from "./first-run.ts";
import { assertHostsPossible, type Host, makeHosts, removeHosts } from "./hosts.ts";
import { type Backend, onLoopback, startLoadBalancer } from "./load-balancer.ts";
import { dataDirIdentities } from "./nats-identities.ts";
import {
  findNatsServer,
  natsServerProcs,
  type RunningNats,
  startNatsCluster,
  startNatsServer,
} from "./nats-server.ts";
import { createLineWriter, lineDestination } from "./output.ts";
import { Supervisor } from "./supervisor.ts";

const write = await createLineWriter();
/** The launcher's own lines (start, ready, restarts) are printed whatever LOG_LEVEL says. */
const log = createLogger("launcher", "info", lineDestination("launcher", write));

/**
 * `pnpm start`: with NATS_URL unset, starts a nats-server from PATH and runs each service as its
 * own process; without nats-server, runs everything in one process over an in-process bus.
 */
async function main(): Promise<{ stop(): Promise<void> }> {
  // Every variable of every process, checked before anything starts or is written (exit 78
  // naming each bad one).
  const config = checkConfiguration();
  const dataDir = resolve(config.DATA_DIR);
  const onHosts = config.LAUNCH_HOSTS === "netns";
  // One system per DATA_DIR: made, writable and this launcher's (released at exit), or exit 78.
  const lock = takeDataDir(dataDir, onHosts ? "pnpm cluster up" : "pnpm start");
  if (lock.previous) {
    log.info(`took over DATA_DIR ${dataDir} from launcher ${lock.previous.pid}, which is gone`);
    await previousProcessesGone(lock, dataDir);
  }
  if (onHosts) assertHostsPossible();
  // Taken already: say so now, before anything starts, rather than after announcing the URL.
  if (config.REPLICAS === 1 || onHosts) await ensurePortFree(config.GATEWAY_PORT, config.GATEWAY_HOST);
  // Outside production, a start without credentials gets development ones (first-run.ts).
  const firstRun =
    process.env.NODE_ENV !== "production" && noCredentialsConfigured(process.env)
      ? developmentCredentials(dataDir)
      : undefined;
  const env = {
    ...process.env,
    ...(firstRun ? credentialsEnv(firstRun.credentials) : {}),
    DATA_DIR: dataDir,
    GATEWAY_PORT: String(config.GATEWAY_PORT),
    // Gateways behind the balancer listen on ports of their own; their URLs are the balancer's.
    PUBLIC_URL: process.env.PUBLIC_URL || gatewayUrl(config),
  };
  const onReady = () => {
    if (firstRun)
      log.info(firstRunBanner(firstRun.credentials, { url: gatewayUrl(config), dataDir, ...firstRun }));
  };
  const natsBinary = config.NATS_URL ? undefined : findNatsServer();
  if (onHosts && (config.NATS_URL || !natsBinary || config.LAUNCH_MODE === "single")) {
    throw new ConfigError(
      "LAUNCH_HOSTS=netns starts its own NATS cluster: it needs nats-server on PATH, NATS_URL unset and LAUNCH_MODE other than single",
    );
  }

  if (config.LAUNCH_MODE === "single" || (!config.NATS_URL && !natsBinary)) {
    log.info(
      config.LAUNCH_MODE === "single"
        ? "LAUNCH_MODE=single: running all services in one process over the in-process bus"
        : "nats-server not found on PATH and NATS_URL unset: running all services in one process over the in-process bus",
    );
    // Loaded only here: in multi-process mode the launcher holds no service code, bus or store.
    const { runSingleProcess } = await import("./single-process.ts");
    const running = await runSingleProcess(
      serviceNames,
      env,
      config.LOG_LEVEL,
      write,
      config.DEAD_LETTER_AFTER,
    );
    log.info({ url: gatewayUrl(config) }, `ready on ${gatewayUrl(config)}`);
    onReady();
    return running;
  }

  const backends = backendProcesses(config.LAUNCH_MODE);
  // The launcher's own nats-servers let in only the identities it keeps under DATA_DIR, each
  // service with its own (nats-identities.ts); a NATS_URL of the operator's comes with theirs.
  const identities = config.NATS_URL ? undefined : dataDirIdentities(dataDir);
  const authorization = identities ? authorizationConfig(identities.keys) : "";
  // One host per NATS node and per process (`LAUNCH_HOSTS=netns`), made before anything starts.
  const hosts = onHosts ? makeHosts(hostNames(backends, config.REPLICAS), dataDir) : undefined;
  const hostOf = (name: string): Host | undefined => hosts?.get(name);
  // The processes that share the machine's cores: one per host when there are hosts (the
  // nats-servers and every replica of every process, the gateway's included); else the one
  // nats-server and those replicas.
  const sharing = hosts?.size ?? 1 + (backends.length + 1) * config.REPLICAS;
  let nats: RunningNats[] = [];
  try {
    if (hosts && natsBinary) {
      nats = await startNatsCluster(
        natsBinary,
        dataDir,
        authorization,
        natsServerProcs(sharing),
        NATS_NODES.map((name) => ({ name, ...(hostOf(name) as Host) })),
      );
      log.info(`started a NATS cluster of ${nats.length} (${nats.map((node) => node.url).join(", ")})`);
    } else if (!config.NATS_URL && natsBinary) {
      // Never on the gateway's port, which nothing holds until the gateway starts.
      nats = [
        await startNatsServer(natsBinary, dataDir, authorization, natsServerProcs(sharing), [
          config.GATEWAY_PORT,
        ]),
      ];
      log.info(`started ${natsBinary} at ${nats[0]?.url} (JetStream data in ${dataDir}/nats)`);
    }
  } catch (error) {
    if (hosts) removeHosts();
    throw error;
  }
  // Every service is given every node; the client picks one and fails over to the others.
  const natsUrl = config.NATS_URL ?? nats.map((node) => node.url).join(",");
  log.info(layoutMessage(config.LAUNCH_MODE));

  let balancer: Awaited<ReturnType<typeof startLoadBalancer>> | undefined;
  let stopping = false;
  const supervisor = new Supervisor({
    env: { ...env, NATS_URL: natsUrl, ...(identities ? { NATS_CREDENTIALS: identities.dir } : {}) },
    dataDir,
    nats,
    write,
    logger: log,
    onConfigError(label, message) {
      if (stopping) return;
      stopping = true;
      log.fatal(
        { process: label, reason: message },
        `${label} refused its configuration (exit ${CONFIG_EXIT_CODE}): stopping everything`,
      );
      void (async () => {
        balancer?.close();
        await supervisor.stop();
        if (hosts) removeHosts();
        process.exit(CONFIG_EXIT_CODE);
      })();
    },
  });
  for (const services of backends) {
    supervisor.start(services, config.REPLICAS, {
      hostFor: (replica) => hostOf(hostName(services, replica)),
    });
  }
  // One gateway listens on GATEWAY_PORT; several (or gateways on hosts of their own) sit behind a
  // round-robin balancer there.
  if (config.REPLICAS === 1 && !hosts) {
    supervisor.start(["gateway"], 1);
  } else {
    let gateways: Backend[];
    if (hosts) {
      gateways = Array.from({ length: config.REPLICAS }, (_, i) => ({
        host: (hostOf(hostName(["gateway"], i + 1)) as Host).address,
        port: GATEWAY_PORT_ON_HOST,
      }));
    } else {
      // One at a time, so no two are the same, and never the gateway's or nats-server's port.
      const ports: number[] = [];
      const taken = [config.GATEWAY_PORT, ...nats.map((node) => Number(new URL(node.url).port))];
      for (let replica = 0; replica < config.REPLICAS; replica++) {
        ports.push(await freeListenPort("127.0.0.1", { avoid: [...taken, ...ports] }));
      }
      gateways = ports.map(onLoopback);
    }
    supervisor.start(["gateway"], config.REPLICAS, {
      envFor: (replica) => ({
        GATEWAY_PORT: String(gateways[replica - 1]?.port),
        ...(hosts ? { GATEWAY_HOST: "0.0.0.0" } : {}),
      }),
      hostFor: (replica) => hostOf(hostName(["gateway"], replica)),
    });
    try {
      balancer = await startLoadBalancer(config.GATEWAY_PORT, gateways);
    } catch (error) {
      await supervisor.stop();
      if (hosts) removeHosts();
      throw portInUse(error, "GATEWAY_PORT") ?? error;
    }
    const where = hosts
      ? `at ${gateways.map(({ host, port }) => `${host}:${port}`).join(", ")}`
      : `on ports ${gateways.map(({ port }) => port).join(", ")}`;
    log.info(`${gateways.length} gateways ${where} behind :${config.GATEWAY_PORT}`);
  }
  const ready = announceWhenReady(config, () => stopping, onReady);
  return {
    async stop() {
      stopping = true;
      ready.cancel();
      balancer?.close();
      await supervisor.stop();
      if (hosts) removeHosts();
    },
  };
}

/** The NATS nodes of `LAUNCH_HOSTS=netns`, a host each. */
const NATS_NODES = ["nats-1", "nats-2", "nats-3"];
/** A gateway on a host of its own listens on this port there. */
const GATEWAY_PORT_ON_HOST = 8080;

/** The host of one replica of a process: `catalogue-1`, `ordering+customer+notification-2`. */
function hostName(services: readonly string[], replica: number): string {
  return `${services.join("+")}-${replica}`;
}

/** Every host `LAUNCH_HOSTS=netns` makes: the NATS nodes, then each replica of each process. */
function hostNames(backends: readonly (readonly string[])[], replicas: number): string[] {
  const processes = [...backends, ["gateway"]];
  return [
    ...NATS_NODES,
    ...processes.flatMap((services) => Array.from({ length: replicas }, (_, i) => hostName(services, i + 1))),
  ];
}

function gatewayUrl(config: { GATEWAY_HOST: string; GATEWAY_PORT: number }): string {
  const host = config.GATEWAY_HOST === "0.0.0.0" ? "127.0.0.1" : config.GATEWAY_HOST;
  return `http://${host}:${config.GATEWAY_PORT}`;
}

async function ensurePortFree(port: number, host: string): Promise<void> {
  await new Promise<void>((done, fail) => {
    const probe = createServer();
    probe.once("error", (error) => fail(portInUse(error, "GATEWAY_PORT") ?? error));
    probe.listen(port, host, () => probe.close(() => done()));
  });
}

/** Logs "ready" once the gateway's /readyz answers 200 (every service reachable), then `onReady`. */
function announceWhenReady(
  config: { GATEWAY_HOST: string; GATEWAY_PORT: number },
  stopped: () => boolean,
  onReady: () => void,
): { cancel(): void } {
  let cancelled = false;
  const url = gatewayUrl(config);
  void (async () => {
    while (!cancelled && !stopped()) {
      try {
        const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
        if (response.status === 200) {
          log.info({ url }, `ready on ${url}`);
          onReady();
          return;
        }
      } catch {
        // not listening yet
      }
      await new Promise((next) => setTimeout(next, 100));
    }
  })();
  return {
    cancel() {
      cancelled = true;
    },
  };
}

/**
 * When the process that started the launcher goes away without passing a signal on (pnpm killed
 * outright, a closed terminal), the launcher is re-parented. It then stops everything as on
 * SIGTERM, so nothing is left running and no port stays held.
 */
function stopWithParent(): void {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.kill(process.pid, "SIGTERM");
  }, 250);
  watch.unref();
}

if (process.env.LAUNCH_DETACHED !== "true") stopWithParent();
// The terminal closed: stop everything, as on SIGTERM.
process.on("SIGHUP", () => process.kill(process.pid, "SIGTERM"));
void runAsProcess(async () => {
  try {
    return await main();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new Error(`cannot start: ${(error as Error).message}`);
  }
});
