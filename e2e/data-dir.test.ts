import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { outputOf, processAlive, tempDir } from "@cheese/testing";
import { afterAll, describe, expect, it } from "vitest";
import { testListenPort } from "./support/ports.ts";
import { launcherOnly, waitUntilReady } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(repoRoot, "apps", "launcher", "dist", "cli.js");
/** The exit code of a process that refuses its configuration (documented in docs/operations.md). */
const CONFIG_EXIT_CODE = 78;
/** The unprivileged user an unwritable DATA_DIR is tried as when the tests run as root. */
const NOBODY = 65534;

interface Launch {
  child: ChildProcess;
  port: number;
  output(): string;
  exited: Promise<number | null>;
  /** Kills its process group (the launcher; each service and nats-server has a group of its own). */
  kill(signal: NodeJS.Signals): void;
}

const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

function newDataDir(): string {
  const data = tempDir("data-dir");
  cleanups.push(data.remove);
  return data.path;
}

/**
 * Runs the built launcher as `pnpm start` does, on DATA_DIR, in a process group of its own;
 * `underShell`: as the child of a shell that waits for it (its parent, which a test may kill).
 */
async function launch(
  dataDir: string,
  options: { uid?: number; underShell?: boolean } = {},
): Promise<Launch> {
  const port = await testListenPort();
  // `; exit $?` keeps the shell from exec'ing node: it stays the launcher's parent.
  const command = options.underShell
    ? ["sh", ["-c", `"${process.execPath}" "${cli}"; exit $?`]]
    : [process.execPath, [cli]];
  const child = spawn(command[0] as string, command[1] as string[], {
    cwd: repoRoot,
    env: { ...process.env, NATS_URL: "", LOG_LEVEL: "warn", GATEWAY_PORT: String(port), DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
  });
  const output = outputOf(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), signal);
    } catch {
      // gone already
    }
  };
  cleanups.push(() => child.exitCode === null && kill("SIGKILL"));
  return { child, port, output, exited, kill };
}

/** Until the gateway on `port` answers /readyz 200 (a minute at most). */
function ready(port: number): Promise<void> {
  return waitUntilReady(`http://127.0.0.1:${port}`, 60_000);
}

/** Every process the launcher on DATA_DIR started (DATA_DIR/run/processes.json). */
function started(dataDir: string): number[] {
  const { instances, nats } = JSON.parse(readFileSync(join(dataDir, "run", "processes.json"), "utf8"));
  return [...instances, ...nats].map(({ pid }: { pid: number | null }) => pid).filter((pid) => pid !== null);
}

/** Exits 78 within 2 s, printing one line that names DATA_DIR; nothing started. */
async function refusedQuickly(run: Launch, dataDir: string, why: RegExp): Promise<void> {
  const since = Date.now();
  const code = await run.exited;
  expect(Date.now() - since).toBeLessThan(2_000);
  expect(code).toBe(CONFIG_EXIT_CODE);
  const lines = run.output().trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(`DATA_DIR ${dataDir} `);
  expect(lines[0]).toMatch(why);
}

describe.skipIf(launcherOnly("one system per DATA_DIR"))("one system per DATA_DIR", () => {
  it("a second start on a DATA_DIR in use exits 78 naming DATA_DIR and the launcher holding it; the first runs on", async () => {
    const dataDir = newDataDir();
    const first = await launch(dataDir);
    await ready(first.port);
    const processes = started(dataDir);

    const second = await launch(dataDir);
    await refusedQuickly(second, dataDir, new RegExp(`in use by process ${first.child.pid} \\(pnpm start`));
    // Nothing of the second started, nothing of the first stopped.
    expect(started(dataDir)).toEqual(processes);
    expect(processes.every(processAlive)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${first.port}/readyz`)).status).toBe(200);

    first.kill("SIGTERM");
    expect(await first.exited).toBe(0);
  });

  it("the lock of a launcher that was killed is taken over, once what it left running has stopped", async () => {
    const dataDir = newDataDir();
    const first = await launch(dataDir);
    await ready(first.port);
    const left = started(dataDir);
    first.kill("SIGKILL");
    await first.exited;

    const second = await launch(dataDir);
    await ready(second.port);
    // Its own lock now, and nothing of the first's system runs beside it.
    expect(JSON.parse(readFileSync(join(dataDir, "lock.json"), "utf8")).pid).toBe(second.child.pid);
    expect(left.filter(processAlive)).toEqual([]);
    second.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("a launcher whose parent is killed stops everything and releases DATA_DIR", async () => {
    const dataDir = newDataDir();
    const shell = await launch(dataDir, { underShell: true });
    await ready(shell.port);
    const launcher = JSON.parse(readFileSync(join(dataDir, "lock.json"), "utf8")).pid as number;
    expect(launcher).not.toBe(shell.child.pid);
    const processes = started(dataDir);
    shell.child.kill("SIGKILL"); // the shell alone: nothing is passed on to the launcher
    await expect.poll(() => processAlive(launcher), { timeout: 15_000 }).toBe(false);
    for (const pid of processes) await expect.poll(() => processAlive(pid), { timeout: 15_000 }).toBe(false);
    expect(existsSync(join(dataDir, "lock.json"))).toBe(false);
  });

  it("a DATA_DIR that cannot be written exits 78 within 2 s naming it", async () => {
    const parent = newDataDir();
    const dataDir = join(parent, "read-only");
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o555);
    // root may write anywhere: the launcher is run as nobody then.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) chmodSync(parent, 0o755);
    const run = await launch(dataDir, asRoot ? { uid: NOBODY } : {});
    await refusedQuickly(run, dataDir, /cannot be written: EACCES/);
  });

  it("a DATA_DIR that cannot be created exits 78 within 2 s naming it", async () => {
    const file = join(newDataDir(), "dev-credentials.json");
    writeFileSync(file, "{}");
    const dataDir = join(file, "data");
    await refusedQuickly(await launch(dataDir), dataDir, /cannot be created: .* is not a directory/);
  });

  it.each(["/proc/cheese-data", "/proc/self"])(
    "a DATA_DIR under /proc (%s) exits 78 within 2 s naming it, not a hang",
    async (dataDir) => {
      await refusedQuickly(await launch(dataDir), dataDir, /cannot be (created|written)/);
    },
  );
});
