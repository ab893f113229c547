import { resolve } from "node:path";
import { ConfigError, runAsProcess } from "@cheese/service-kit";
import { loadLauncherConfig, serviceNames } from "./config.ts";
import { startLoadBalancer } from "./load-balancer.ts";
import { findNatsServer, freeLoopbackPort, startNatsServer } from "./nats-server.ts";
import { runSingleProcess } from "./single-process.ts";
import { Supervisor } from "./supervisor.ts";

/**
 * `pnpm start`: with NATS_URL unset, starts a nats-server from PATH and runs each service as its
 * own process; without nats-server, runs everything in one process over an in-process bus.
 */
async function main(): Promise<{ stop(): Promise<void> }> {
  const config = loadLauncherConfig();
  const dataDir = resolve(config.DATA_DIR);
  const env = { ...process.env, DATA_DIR: dataDir, GATEWAY_PORT: String(config.GATEWAY_PORT) };
  const natsBinary = config.NATS_URL ? undefined : findNatsServer();

  if (config.LAUNCH_MODE === "single" || (!config.NATS_URL && !natsBinary)) {
    console.log(
      config.LAUNCH_MODE === "single"
        ? "[launcher] LAUNCH_MODE=single: running all services in one process over the in-process bus"
        : "[launcher] nats-server not found on PATH and NATS_URL unset: running all services in one process over the in-process bus",
    );
    return runSingleProcess(serviceNames, env, config.LOG_LEVEL);
  }

  let nats: Awaited<ReturnType<typeof startNatsServer>> | undefined;
  if (!config.NATS_URL && natsBinary) {
    nats = await startNatsServer(natsBinary, dataDir);
    console.log(`[launcher] started ${natsBinary} at ${nats.url} (JetStream data in ${dataDir}/nats)`);
  }
  const natsUrl = config.NATS_URL ?? nats?.url;
  console.log(
    `[launcher] running each service as its own process over NATS; gateway on http://127.0.0.1:${config.GATEWAY_PORT}`,
  );
  const supervisor = new Supervisor({ ...env, NATS_URL: natsUrl }, dataDir);
  for (const service of serviceNames) {
    if (service !== "gateway") supervisor.start(service, config.REPLICAS);
  }
  // One gateway listens on GATEWAY_PORT; several sit behind a round-robin balancer there.
  let balancer: Awaited<ReturnType<typeof startLoadBalancer>> | undefined;
  if (config.REPLICAS === 1) {
    supervisor.start("gateway", 1);
  } else {
    const ports = await Promise.all(Array.from({ length: config.REPLICAS }, () => freeLoopbackPort()));
    supervisor.start("gateway", config.REPLICAS, (replica) => ({ GATEWAY_PORT: String(ports[replica - 1]) }));
    balancer = await startLoadBalancer(config.GATEWAY_PORT, ports);
    console.log(
      `[launcher] ${config.REPLICAS} gateways on ports ${ports.join(", ")} behind :${config.GATEWAY_PORT}`,
    );
  }
  return {
    async stop() {
      balancer?.close();
      await supervisor.stop();
      if (nats && nats.process.exitCode === null) {
        const exited = new Promise((done) => nats?.process.once("exit", done));
        nats.process.kill("SIGTERM");
        await exited;
      }
    },
  };
}

void runAsProcess(async () => {
  try {
    return await main();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new Error(`cannot start: ${(error as Error).message}`);
  }
});
