import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { listenPortRanges } from "@cheese/service-kit";
import { freePort, processAlive, tempDir } from "@cheese/testing";
import { afterAll, describe, expect, it } from "vitest";
import { testListenPort } from "./support/ports.ts";
import { launcherOnly, waitUntilReady } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(repoRoot, "apps", "launcher", "dist", "cli.js");
/** The exit code of a process that refuses its configuration (documented in docs/operations.md). */
const CONFIG_EXIT_CODE = 78;

interface Launch {
  child: ChildProcess;
  port: number;
  dataDir: string;
  output(): string;
  stdout(): string;
  exited: Promise<number | null>;
}

const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups) cleanup();
});

/** Runs `command` (the built launcher unless told otherwise) as `pnpm start` would, on a free port. */
async function launch(env: Record<string, string>, command = [process.execPath, cli]): Promise<Launch> {
  // Below the ephemeral range: a port just handed out for port 0 could go to a health server.
  const port = await testListenPort();
  const data = tempDir("launch");
  cleanups.push(data.remove);
  const [file, ...args] = command;
  const child = spawn(file!, args, {
    cwd: repoRoot,
    env: {
      ...process.env,
      NATS_URL: "",
      LOG_LEVEL: "warn",
      GATEWAY_PORT: String(port),
      DATA_DIR: data.path,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let stdout = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  cleanups.push(() => child.exitCode === null && child.kill("SIGKILL"));
  return { child, port, dataDir: data.path, output: () => output, stdout: () => stdout, exited };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(true));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(false)));
  });
}

/** Every process the launcher started (DATA_DIR/run/processes.json), nats-server's port. */
function started(dataDir: string): { pids: number[]; natsPort?: number; natsPid?: number } {
  const file = join(dataDir, "run", "processes.json");
  if (!existsSync(file)) return { pids: [] };
  const { processes, natsUrl, natsPid } = JSON.parse(readFileSync(file, "utf8"));
  return {
    pids: Object.values(processes as Record<string, number[]>).flat(),
    ...(natsUrl ? { natsPort: Number(new URL(natsUrl).port) } : {}),
    ...(natsPid ? { natsPid } : {}),
  };
}

/** Until the gateway on `port` answers /readyz 200 (a minute at most). */
function ready(port: number): Promise<void> {
  return waitUntilReady(`http://127.0.0.1:${port}`, 60_000);
}

/** Nothing the launcher started is left: no process, no port held. */
async function nothingLeft(launch: Launch, pids: number[], natsPort: number | undefined): Promise<void> {
  for (const pid of pids) await expect.poll(() => processAlive(pid), { timeout: 15_000 }).toBe(false);
  await expect.poll(() => listening(launch.port), { timeout: 15_000 }).toBe(false);
  if (natsPort) await expect.poll(() => listening(natsPort), { timeout: 15_000 }).toBe(false);
}

describe.skipIf(launcherOnly("stopping on bad configuration and on signals"))("pnpm start", () => {
  describe("stops everything, exit 78, with one clear message on a bad configuration", () => {
    it.each([
      ["WEBHOOK_RETRY_DELAYS", "banana"],
      ["WEBHOOK_TIMEOUT", "10x"],
      ["OAUTH_CLIENTS", "{bad"],
      ["TRUSTED_PROXIES", "10.0.0.0/99"],
      ["API_KEYS", "nocolon"],
      ["API_KEY_LIFETIME", "forever"],
      ["ORDER_AUTO_APPROVE_DELAY", "-5s"],
      ["REPLICAS", "0"],
    ])("%s=%s", async (variable, value) => {
      const run = await launch({ [variable]: value });
      expect(await run.exited).toBe(CONFIG_EXIT_CODE);
      expect(run.output()).toMatch(new RegExp(`^invalid configuration:\n {2}${variable}: `));
      expect(run.output()).not.toMatch(/\n\s+at /); // no stack trace
      // Refused by the launcher before anything started: no nats-server, no service, no file.
      expect(run.output()).not.toContain("nats-server");
      expect(started(run.dataDir)).toEqual({ pids: [] });
      expect(existsSync(join(run.dataDir, "nats"))).toBe(false);
    });

    it("GATEWAY_PORT taken by another process: one line, before anything starts", async () => {
      const port = await freePort();
      const holder: Server = createServer();
      await new Promise<void>((resolve) => holder.listen(port, "127.0.0.1", resolve));
      try {
        const run = await launch({ GATEWAY_PORT: String(port) });
        expect(await run.exited).toBe(CONFIG_EXIT_CODE);
        const lines = run.output().trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(`GATEWAY_PORT: 127.0.0.1:${port} is already in use`);
        expect(started(run.dataDir).pids).toEqual([]);
      } finally {
        holder.close();
      }
    });
  });

  describe("stops every process it started", () => {
    it.each(["SIGTERM", "SIGINT"] as const)("on %s to the launcher", async (signal) => {
      const run = await launch({});
      await ready(run.port);
      const { pids, natsPort } = started(run.dataDir);
      expect(pids).toHaveLength(5);
      // The launcher's own pick is never the gateway's port, nor in the tests' half it came from.
      const { launcher, tests } = listenPortRanges();
      expect(run.port).toBeGreaterThanOrEqual(tests.low);
      expect(natsPort).not.toBe(run.port);
      expect(natsPort).toBeGreaterThanOrEqual(launcher.low);
      expect(natsPort).toBeLessThan(launcher.high);
      run.child.kill(signal);
      expect(await run.exited).toBe(0);
      await nothingLeft(run, pids, natsPort);
    });

    it("on SIGTERM to the pnpm process alone, which ends quietly with exit 0", async () => {
      // pnpm's own CLI when the tests run under pnpm; else the one on PATH.
      const execPath = process.env.npm_execpath;
      const pnpm =
        execPath && /pnpm/.test(execPath) ? [process.execPath, execPath, "start"] : ["pnpm", "start"];
      const run = await launch({}, pnpm);
      await ready(run.port);
      const { pids, natsPort } = started(run.dataDir);
      expect(pids).toHaveLength(5);
      run.child.kill("SIGTERM");
      expect(await run.exited).toBe(0);
      expect(run.output()).not.toMatch(/ELIFECYCLE|Command failed/);
      await nothingLeft(run, pids, natsPort);
    });

    it("when the launcher itself is killed: the services see it gone and stop, and so does nats-server", async () => {
      const run = await launch({ LOG_LEVEL: "info" });
      await ready(run.port);
      const { pids, natsPid, natsPort } = started(run.dataDir);
      expect(natsPid).toBeGreaterThan(0);
      run.child.kill("SIGKILL");
      // The services through their IPC channel; nats-server through its parent-death signal.
      await nothingLeft(run, [...pids, natsPid!], natsPort);
    });
  });

  describe("output", () => {
    it("for a log shipper: every line on stdout is one service's JSON, naming it", async () => {
      const run = await launch({ LOG_LEVEL: "info" });
      await ready(run.port);
      // The launcher says "ready on" after its own /readyz probe, which may come after ours.
      await expect
        .poll(() => run.stdout(), { timeout: 15_000 })
        .toMatch(/"msg":"ready on http:\/\/127\.0\.0\.1:\d+"/);
      run.child.kill("SIGTERM");
      await run.exited;
      const lines = run.stdout().trim().split("\n");
      const services = new Set<string>();
      for (const line of lines) {
        const entry = JSON.parse(line);
        expect(typeof entry.service, line).toBe("string");
        services.add(entry.service);
      }
      expect([...services].sort()).toEqual(
        ["catalogue", "customer", "gateway", "launcher", "notification", "ordering"].sort(),
      );
    });

    it("on a terminal: pretty lines, each prefixed with its process", async () => {
      // script(1) gives the launcher a pseudo-terminal for stdout.
      const run = await launch({ LOG_LEVEL: "info" }, [
        "script",
        "-qfec",
        `${process.execPath} ${cli}`,
        "/dev/null",
      ]);
      await ready(run.port);
      await expect.poll(() => run.output(), { timeout: 10_000 }).toContain("ready on");
      // A service's lines reach the launcher up to 100 ms after they are logged (written in
      // batches), so the catalogue's may come after the launcher's "ready on".
      await expect
        .poll(() => run.output(), { timeout: 10_000 })
        .toMatch(/\[catalogue\] .*INFO.*catalogue started/);
      const output = run.output();
      const lines = output.split(/\r?\n/).filter((line) => line.trim());
      for (const line of lines) {
        expect(line).toMatch(/^\[(launcher|catalogue|ordering|customer|notification|gateway)\] /);
      }
      expect(output).not.toMatch(/^\{/m);
      const { pids, natsPort } = started(run.dataDir);
      run.child.kill("SIGTERM"); // the terminal goes away: the launcher stops everything
      await run.exited;
      await nothingLeft(run, pids, natsPort);
    });
  });
});
