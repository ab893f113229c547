import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { testListenPort } from "./ports.ts";
import { type RunningSystem, waitUntilReady } from "./system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export interface ExtraGateway {
  rootUrl: string;
  baseUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts one more gateway process next to a running system, as a second replica would run: same
 * NATS, same DATA_DIR (so the same signing key) and the same environment as the system's own
 * gateway (copied from its process), on a port of its own.
 */
export async function startExtraGateway(system: RunningSystem): Promise<ExtraGateway> {
  const [gatewayPid] = system.pids().gateway ?? [];
  if (!gatewayPid) throw new Error("the system runs no gateway process to copy");
  const env = Object.fromEntries(
    readFileSync(`/proc/${gatewayPid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
  // Not a port the kernel hands out for port 0, which a health server starting meanwhile could
  // take and then answer /readyz in this gateway's place.
  const port = await testListenPort();
  const child: ChildProcess = spawn(
    process.execPath,
    [join(repoRoot, "apps", "launcher", "dist", "service.js")],
    {
      cwd: repoRoot,
      env: {
        ...env,
        NATS_URL: system.natsUrl(),
        ...(system.natsCredentials() ? { NATS_CREDENTIALS: system.natsCredentials() } : {}),
        DATA_DIR: system.dataDir,
        GATEWAY_PORT: String(port),
        HEALTH_PORT: "0",
        SERVICE: "gateway",
        SERVICE_INSTANCE: "gateway-extra",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  const rootUrl = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(rootUrl, 30_000, () => child.exitCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\nextra gateway output:\n${output}`);
  }
  return { rootUrl, baseUrl: `${rootUrl}/v2`, stop };
}
