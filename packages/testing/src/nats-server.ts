import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { askAgain } from "@cheese/ask-again";
import { nkeys } from "nats";
import { freePort } from "./ports.ts";
import { tempDir } from "./temp-dir.ts";

export interface NatsServerHandle {
  url: string;
  port: number;
  /**
   * With `{ identity }`: the directory (what NATS_CREDENTIALS names) holding `<identity>.nk`, the
   * nkey seed of the one user the server lets in.
   */
  credentialsDir?: string;
  stop(): Promise<void>;
}

/**
 * Starts a real `nats-server` from PATH with JetStream on a free loopback port and a
 * throw-away store directory. Throws with a clear message when nats-server is not installed.
 * With `identity`, the server lets in only one user (an nkey), whose seed is `<identity>.nk` in
 * `credentialsDir`; nothing else may connect.
 */
export async function startNatsServer(options: { identity?: string } = {}): Promise<NatsServerHandle> {
  const port = await freePort();
  const store = tempDir("nats");
  const auth = options.identity ? writeCredentials(store.path, options.identity) : undefined;
  const child = await spawnNatsServer([
    ...(auth ? ["-c", auth.config] : []),
    ...["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store.path],
  ]);
  await Promise.race([waitForPort(port, 10_000), child.failed]);
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    ...(auth ? { credentialsDir: auth.dir } : {}),
    async stop() {
      await child.stop();
      store.remove();
    },
  };
}

/** A new nkey user: its seed in `<dir>/credentials/<identity>.nk`, and a configuration letting only it in. */
function writeCredentials(root: string, identity: string): { dir: string; config: string } {
  const user = nkeys.createUser();
  const dir = join(root, "credentials");
  mkdirSync(dir, { mode: 0o700 });
  writeFileSync(join(dir, `${identity}.nk`), `${new TextDecoder().decode(user.getSeed())}\n`, {
    mode: 0o600,
  });
  const config = join(root, "auth.conf");
  writeFileSync(config, `authorization { users = [ { nkey: ${user.getPublicKey()} } ] }\n`);
  return { dir, config };
}

export interface NatsClusterNode {
  /** The server's name (`-n`), as JetStream reports it among a stream's replicas. */
  name: string;
  url: string;
  port: number;
  /** Its monitoring endpoint (`/varz`, `/jsz`, `/healthz`), `http://127.0.0.1:<port>`. */
  monitorUrl: string;
}

export interface NatsClusterHandle {
  /** Every node's client URL, comma-separated, as `NATS_URL` takes them. */
  url: string;
  nodes: NatsClusterNode[];
  /** Stops every node and removes their stores. */
  stop(): Promise<void>;
}

/**
 * Starts a JetStream cluster of `size` (default 3) `nats-server`s on loopback ports, each with its
 * own store directory and routes to the others, and returns once every node says it is healthy
 * (JetStream has elected its meta leader: streams can be created). On failure, whatever started
 * is stopped.
 */
export async function startNatsCluster(size = 3): Promise<NatsClusterHandle> {
  const clusterName = `cheese-test-${process.pid}`;
  const ports = await distinctFreePorts(size * 3);
  const specs = Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    port: ports[i * 3]!,
    routePort: ports[i * 3 + 1]!,
    monitorPort: ports[i * 3 + 2]!,
    store: tempDir(`nats-n${i + 1}`),
  }));
  const routes = specs.map((s) => `nats-route://127.0.0.1:${s.routePort}`).join(",");
  const started: Array<Awaited<ReturnType<typeof spawnNatsServer>>> = [];
  const stop = async () => {
    await Promise.all(started.map((child) => child.stop()));
    for (const spec of specs) spec.store.remove();
  };
  try {
    for (const spec of specs) {
      started.push(
        await spawnNatsServer([
          ...["-a", "127.0.0.1", "-p", String(spec.port), "-n", spec.name, "-m", String(spec.monitorPort)],
          ...["-js", "-sd", spec.store.path, "--cluster_name", clusterName],
          ...["--cluster", `nats://127.0.0.1:${spec.routePort}`, "--routes", routes],
        ]),
      );
    }
    const failed = Promise.race(started.map((child) => child.failed));
    await Promise.race([Promise.all(specs.map((s) => waitForHealthy(s.monitorPort, 30_000))), failed]);
  } catch (error) {
    await stop();
    throw error;
  }
  const nodes = specs.map((s) => ({
    name: s.name,
    port: s.port,
    url: `nats://127.0.0.1:${s.port}`,
    monitorUrl: `http://127.0.0.1:${s.monitorPort}`,
  }));
  return { url: nodes.map((n) => n.url).join(","), nodes, stop };
}

/** A nats-server child: `failed` rejects if it cannot start or exits; `stop` ends it (SIGTERM). */
async function spawnNatsServer(args: string[]): Promise<{ failed: Promise<never>; stop(): Promise<void> }> {
  const child: ChildProcess = spawn("nats-server", args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (error) =>
      reject(
        new Error(
          `cannot start nats-server (is it on PATH? scripts/install-nats-server.sh): ${error.message}`,
        ),
      ),
    );
    child.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`)));
  });
  failed.catch(() => {}); // also rejects when it is stopped on purpose
  return {
    failed,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** `count` free loopback ports, no two the same. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Polls the monitoring port's `/healthz` (503 until JetStream has a meta leader) until it is 200. */
async function waitForHealthy(monitorPort: number, timeoutMs: number): Promise<void> {
  await askAgain(
    async () => {
      const response = await fetch(`http://127.0.0.1:${monitorPort}/healthz`).catch((error: Error) => {
        throw new NotYet(error.message);
      });
      if (!response.ok) throw new NotYet(`${response.status} ${await response.text()}`);
    },
    { pauseMs: 100, forMs: timeoutMs, retryOn: (error) => error instanceof NotYet },
  ).catch((error: Error) => {
    throw new Error(
      `nats-server on monitor port ${monitorPort} not healthy within ${timeoutMs} ms: ${error.message}`,
    );
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  await askAgain(
    async () => {
      const open = await new Promise<boolean>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      });
      if (!open) throw new NotYet(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
    },
    { pauseMs: 50, forMs: timeoutMs, retryOn: (error) => error instanceof NotYet },
  );
}

/** The server does not answer yet: asked again. */
class NotYet extends Error {}
