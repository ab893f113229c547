import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import type { Server } from "node:net";
import { join } from "node:path";
import { onLoopback, startLoadBalancer } from "@cheese/launcher/load-balancer";
import { dataDirIdentities } from "@cheese/launcher/nats-identities";
import { serviceNodeOptions } from "@cheese/launcher/node-options";
import { authorizationConfig } from "@cheese/messaging/permissions";
import { freePort, tempDir } from "@cheese/testing";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import type { RunningSystem, SystemOptions } from "./running-system.ts";

/** What the global setup hands to every suite under `pnpm test:e2e:containers`. */
export interface ContainerStack {
  /** The project's image (built from the Dockerfile, or E2E_IMAGE). */
  image: string;
  /** The image a NATS server runs from, of the deployment's line (`deploy/checks/nats-image.sh`). */
  natsImage: string;
  /** Variables pointing the services at the production stores that could start. */
  env: Record<string, string>;
}

const backends = ["catalogue", "ordering", "customer", "notification"] as const;

/** A container Docker restarts when its process dies, as an orchestrator would. */
class RestartingContainer extends GenericContainer {
  constructor(image: string) {
    super(image);
    this.hostConfig.RestartPolicy = { Name: "on-failure" };
  }
}

/**
 * The system the way a deployment runs it: five containers from the project's image (REPLICAS
 * of each service; several gateways behind the launcher's balancer), one NATS container, on the host's network, the
 * embedded stores in one data directory they share (or the production stores the stack
 * started). Each container runs as the current user, so the data directory stays ours.
 */
export async function startContainerSystem(
  stack: ContainerStack,
  baseEnv: Record<string, string>,
  options: SystemOptions,
): Promise<RunningSystem> {
  const data = options.dataDir ? { path: options.dataDir, remove: () => {} } : tempDir("containers");
  chmodSync(data.path, 0o777);
  const user = `${process.getuid?.() ?? 1000}:${process.getgid?.() ?? 1000}`;
  const natsPort = await freePort();
  const gatewayPort = options.port ?? (await freePort());
  const replicas = Number(baseEnv.REPLICAS ?? "1");
  const started: { service: string; container: StartedTestContainer }[] = [];
  let balancer: Server | undefined;

  const stop = async () => {
    balancer?.close();
    await Promise.all(started.map(({ container }) => container.stop().catch(() => {})));
    if (!options.dataDir) data.remove();
  };
  try {
    // NATS lets in only the services' identities, each with its subjects, as the deployments do:
    // the seeds stay in the data directory (NATS_CREDENTIALS), the server reads public keys only.
    const identities = dataDirIdentities(data.path);
    writeFileSync(join(data.path, "nats-authorization.conf"), authorizationConfig(identities.keys));
    const nats = await new GenericContainer(stack.natsImage)
      .withNetworkMode("host")
      .withBindMounts([{ source: data.path, target: "/data", mode: "ro" }])
      .withCommand([
        "nats-server",
        "-c",
        "/data/nats-authorization.conf",
        "-js",
        "-a",
        "127.0.0.1",
        "-p",
        String(natsPort),
        "-sd",
        "/tmp/nats",
      ])
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    started.push({ service: "nats", container: nats });

    const { PATH: _path, ...env } = baseEnv;
    const startService = async (service: string, instance: string, port = gatewayPort) => {
      const container = await new RestartingContainer(stack.image)
        .withNetworkMode("host")
        .withUser(user)
        .withBindMounts([{ source: data.path, target: "/data" }])
        .withEnvironment({
          // Gateways behind the balancer build their URLs from its address.
          PUBLIC_URL: `http://127.0.0.1:${gatewayPort}`,
          ...env,
          ...stack.env,
          SERVICE: service,
          // The V8 options the manifests give each service, as `pnpm start` does.
          NODE_OPTIONS: serviceNodeOptions[service as keyof typeof serviceNodeOptions],
          SERVICE_INSTANCE: instance,
          DATA_DIR: "/data",
          NATS_URL: `nats://127.0.0.1:${natsPort}`,
          NATS_CREDENTIALS: "/data/nats-identities",
          HEALTH_HOST: "127.0.0.1",
          HEALTH_PORT: String(await freePort()),
          GATEWAY_HOST: "127.0.0.1",
          GATEWAY_PORT: String(port),
        })
        .start();
      started.push({ service, container });
    };
    // All settled before going on, so a failure leaves no container starting unseen.
    const results = await Promise.allSettled(
      backends.flatMap((service) =>
        Array.from({ length: replicas }, (_, i) =>
          startService(service, replicas > 1 ? `${service}#${i + 1}` : service),
        ),
      ),
    );
    const failed = results.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    if (replicas === 1) {
      await startService("gateway", "gateway", gatewayPort);
    } else {
      // Several gateways behind one address, as the launcher (and any load balancer) serves them.
      const ports = await Promise.all(Array.from({ length: replicas }, () => freePort()));
      await Promise.all(ports.map((port, i) => startService("gateway", `gateway#${i + 1}`, port)));
      balancer = await startLoadBalancer(gatewayPort, ports.map(onLoopback));
    }
  } catch (error) {
    const logs = started.map(({ service, container }) => `${service}:\n${logsOf(container.getId())}`);
    await stop();
    throw new Error(`${(error as Error).message}\ncontainer output:\n${logs.join("\n")}`);
  }

  const rootUrl = `http://127.0.0.1:${gatewayPort}`;
  return {
    mode: "containers",
    baseUrl: `${rootUrl}/v2`,
    rootUrl,
    dataDir: data.path,
    output: () =>
      started
        .filter(({ service }) => service !== "nats")
        .map(({ container }) => logsOf(container.getId()))
        .join(""),
    pids: () => {
      const pids: Record<string, number[]> = {};
      for (const { service, container } of started) {
        if (service === "nats") continue;
        pids[service] ??= [];
        const pid = servicePid(container.getId());
        if (pid) pids[service].push(pid);
      }
      return pids;
    },
    natsUrl: () => `nats://127.0.0.1:${natsPort}`,
    natsCredentials: () => join(data.path, "nats-identities"),
    stop,
  };
}

/** Everything the container wrote, across its restarts (the engine keeps one log per container). */
function logsOf(id: string): string {
  try {
    return execFileSync("docker", ["logs", id], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    return `(no logs: ${(error as Error).message.split("\n")[0]})\n`;
  }
}

/**
 * The host's process id of the service's node process (the child of tini, the container's
 * first process), so a test can SIGKILL or SIGSTOP it as it would a process of `pnpm start`.
 * Undefined while the container is not running.
 */
function servicePid(id: string): number | undefined {
  try {
    const init = execFileSync("docker", ["inspect", "-f", "{{.State.Running}} {{.State.Pid}}", id], {
      encoding: "utf8",
    }).trim();
    const [running, pid] = init.split(" ");
    if (running !== "true" || !pid || pid === "0") return undefined;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/);
    return children[0] ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}
