import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { freeListenPort } from "@cheese/service-kit/launch";

/** The nats-server on PATH, or undefined. */
export function findNatsServer(): string | undefined {
  const found = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : undefined;
}

export interface RunningNats {
  url: string;
  process: ChildProcess;
}

/** Starts nats-server with JetStream on a free loopback port, its data under DATA_DIR/nats. */
export async function startNatsServer(binary: string, dataDir: string): Promise<RunningNats> {
  const port = await freeListenPort();
  const storeDir = resolve(join(dataDir, "nats"));
  mkdirSync(storeDir, { recursive: true });
  const child = await runNatsServer(binary, { host: "127.0.0.1", port, storeDir });
  return { url: `nats://127.0.0.1:${port}`, process: child };
}

/**
 * Runs nats-server with JetStream at `host:port` on the store `storeDir` and resolves once it
 * says it is ready (the launcher's start, and a supervisor's restart on the same store).
 */
export async function runNatsServer(
  binary: string,
  { host, port, storeDir }: { host: string; port: number; storeDir: string },
): Promise<ChildProcess> {
  // Its own process group: a Ctrl-C reaches the launcher, which stops the services before NATS.
  const child = spawn(binary, ["-a", host, "-p", String(port), "-js", "-sd", storeDir], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((ready, fail) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Server is ready")) ready();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => fail(new Error(`nats-server exited with ${code}:\n${output}`)));
    setTimeout(() => fail(new Error(`nats-server not ready after 10 s:\n${output}`)), 10_000).unref();
  });
  return child;
}
