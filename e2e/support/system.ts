import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "@cheese/testing";
import { type ContainerStack, startContainerSystem } from "./container-system.ts";
import { testListenPort } from "./ports.ts";
import type { RunningSystem, SystemOptions } from "./running-system.ts";

export type { RunningSystem, SystemOptions } from "./running-system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Credentials every system started by the tests knows (see `credentials.ts`). */
export const OPERATOR_KEY = "e2e-operator-key";
export const OPERATOR_CLIENT = { id: "e2e-operator", secret: "e2e-operator-secret" };
export const defaultCredentials = {
  API_KEYS: `${OPERATOR_KEY}:enterprise`,
  OAUTH_CLIENTS: JSON.stringify([
    {
      ...OPERATOR_CLIENT,
      scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
      redirectUris: [],
      plan: "enterprise",
    },
  ]),
  // Suites of other areas must not trip over the free plan's burst of 10 (anonymous registrations
  // all come from 127.0.0.1; customers poll). The identity suites set the spec's plans themselves.
  ANON_PLAN: "enterprise",
  RATE_LIMIT_PLANS: "free=1000/unlimited,pro=1000/unlimited",
};

/**
 * Starts the whole system exactly as `pnpm start` does (the built launcher CLI), on a free gateway
 * port and a fresh DATA_DIR, and waits until GET /readyz answers 200. Under
 * `pnpm test:e2e:containers`, from the project's image instead: one container per process.
 */
export async function startSystem(options: SystemOptions = {}): Promise<RunningSystem> {
  const stack = await containerStack();
  if (stack) {
    const env = setOnly({
      LOG_LEVEL: "warn",
      REPLICAS: process.env.E2E_REPLICAS ?? "1",
      ...defaultCredentials,
      ...options.env,
    });
    const system = await startContainerSystem(stack, env, options);
    try {
      await waitUntilReady(system.rootUrl, options.readyTimeoutMs ?? 60_000);
    } catch (error) {
      const output = system.output();
      await system.stop();
      throw new Error(`${(error as Error).message}\ncontainer output:\n${output}`);
    }
    return system;
  }
  // Not a port the kernel hands out for port 0: another process starting meanwhile (one of this
  // system's services, or of another system on the machine) could take it and answer /readyz.
  const port = options.port ?? (await testListenPort());
  const data = options.dataDir ? { path: options.dataDir, remove: () => {} } : tempDir("system");
  const child: ChildProcess = spawn(
    process.execPath,
    // What `pnpm start` runs once built (the global setup builds before any suite starts).
    [join(repoRoot, "apps", "launcher", "dist", "cli.js")],
    {
      cwd: repoRoot,
      env: setOnly({
        ...process.env,
        NATS_URL: "",
        LOG_LEVEL: "warn",
        // E2E_REPLICAS=2 runs every e2e suite against two processes of every service.
        REPLICAS: process.env.E2E_REPLICAS ?? "1",
        ...defaultCredentials,
        ...options.env,
        GATEWAY_PORT: String(port),
        DATA_DIR: data.path,
      }),
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
  const rootUrl = `http://127.0.0.1:${port}`;
  const system: RunningSystem = {
    mode: "launcher",
    baseUrl: `${rootUrl}/v2`,
    rootUrl,
    dataDir: data.path,
    output: () => output,
    pids: () => JSON.parse(readFileSync(join(data.path, "run", "processes.json"), "utf8")).processes,
    natsUrl: () => JSON.parse(readFileSync(join(data.path, "run", "processes.json"), "utf8")).natsUrl,
    natsCredentials: () => join(data.path, "nats-identities"),
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      if (!options.dataDir) data.remove();
    },
  };
  try {
    await waitUntilReady(rootUrl, options.readyTimeoutMs ?? 60_000, () => child.exitCode !== null);
  } catch (error) {
    await system.stop();
    throw new Error(`${(error as Error).message}\nlauncher output:\n${output}`);
  }
  return system;
}

/** The variables that have a value (an `undefined` in `SystemOptions.env` unsets one). */
function setOnly(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

export async function waitUntilReady(
  rootUrl: string,
  timeoutMs: number,
  exited = () => false,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited()) throw new Error("the launcher exited before the system was ready");
    try {
      const response = await fetch(`${rootUrl}/readyz`, { signal: AbortSignal.timeout(3000) });
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`system not ready within ${timeoutMs} ms`);
}

/** A response body as loosely typed JSON, for assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
export async function json(response: Response): Promise<any> {
  return response.json();
}

/**
 * What the global setup prepared under `pnpm test:e2e:containers` (E2E_STACK=containers), or
 * null. Vitest is imported only inside its runner, so `pnpm bench` can start systems too.
 */
async function containerStack(): Promise<ContainerStack | null> {
  if (!process.env.VITEST) return null;
  const { inject } = await import("vitest");
  return inject("containerStack") ?? null;
}

/**
 * Why a suite that needs the launcher itself (its balancer, its restarts, its one-process mode)
 * does not run under `pnpm test:e2e:containers`, or undefined when it runs. Printed when skipped.
 */
export function launcherOnly(what: string): string | undefined {
  if (process.env.E2E_STACK !== "containers") return undefined;
  const reason = `${what} is the launcher's (pnpm start), not the image's: skipped under E2E_STACK=containers`;
  console.warn(reason);
  return reason;
}
