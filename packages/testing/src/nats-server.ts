import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import { freePort } from "./ports.ts";
import { tempDir } from "./temp-dir.ts";

export interface NatsServerHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts a real `nats-server` from PATH with JetStream on a free loopback port and a
 * throw-away store directory. Throws with a clear message when nats-server is not installed.
 */
export async function startNatsServer(): Promise<NatsServerHandle> {
  const port = await freePort();
  const store = tempDir("nats");
  const child: ChildProcess = spawn(
    "nats-server",
    ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store.path],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const spawnError = new Promise<never>((_, reject) => {
    child.once("error", (error) =>
      reject(
        new Error(`cannot start nats-server (is it on PATH? apt-get install nats-server): ${error.message}`),
      ),
    );
    child.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`)));
  });
  await Promise.race([waitForPort(port, 10_000), spawnError]);
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      store.remove();
    },
  };
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
}
