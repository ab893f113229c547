import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { freeListenPort } from "@cheese/service-kit/launch";

/** How long a nats-server may take to say it is ready before it is stopped and the start fails. */
const READY_TIMEOUT_MS = 10_000;

/** The executable `name` on PATH, or undefined. */
function onPath(name: string): string | undefined {
  const found = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : undefined;
}

/** The nats-server on PATH, or undefined. */
export function findNatsServer(): string | undefined {
  return onPath("nats-server");
}

/**
 * util-linux's setpriv (Linux), through which nats-server is started with a parent-death signal,
 * or undefined where there is none.
 */
const setpriv = process.platform === "linux" ? onPath("setpriv") : undefined;

interface NatsServerOptions {
  host: string;
  port: number;
  storeDir: string;
  /** Its configuration file (see `LAME_DUCK`). */
  configFile: string;
}

/**
 * nats-server's lame-duck mode, which it enters on SIGUSR2 (its parent-death signal, below): it
 * takes no new client, lets the ones it has leave for `lame_duck_grace_period`, then closes the
 * rest and exits (at once when none is left). A launcher killed outright leaves its services
 * stopping too (their IPC channel closed): they drain their NATS connections in that time, as
 * on an orderly stop, instead of waiting out their deadline on a server that went with the
 * launcher. 30 s is the least duration nats-server accepts; it closes a service still connected
 * after the grace period within it.
 */
const LAME_DUCK = 'lame_duck_grace_period: "3s"\nlame_duck_duration: "30s"\n';

export interface RunningNats {
  url: string;
  process: ChildProcess;
  /** Starts the same nats-server again (same address, same JetStream store) after it died. */
  respawn(): ChildProcess;
}

/**
 * Starts nats-server with JetStream on a free loopback port, never one of `avoid` (the
 * `GATEWAY_PORT` the launcher was given, not bound yet), its data under DATA_DIR/nats.
 */
export async function startNatsServer(
  binary: string,
  dataDir: string,
  avoid: readonly number[] = [],
): Promise<RunningNats> {
  const port = await freeListenPort("127.0.0.1", { avoid });
  const storeDir = resolve(join(dataDir, "nats"));
  mkdirSync(storeDir, { recursive: true });
  const configFile = resolve(join(dataDir, "run", "nats-server.conf"));
  mkdirSync(dirname(configFile), { recursive: true });
  writeFileSync(configFile, LAME_DUCK);
  const options = { host: "127.0.0.1", port, storeDir, configFile };
  const child = await runNatsServer(binary, options);
  return { url: `nats://127.0.0.1:${port}`, process: child, respawn: () => spawnNatsServer(binary, options) };
}

/**
 * Runs nats-server with JetStream at `host:port` on the store `storeDir` and resolves once it
 * says it is ready; one that exits first or is not ready within 10 s is stopped, and the promise
 * rejects with what it printed.
 */
async function runNatsServer(binary: string, options: NatsServerOptions): Promise<ChildProcess> {
  const child = spawnNatsServer(binary, options);
  await new Promise<void>((ready, fail) => {
    let output = "";
    const settle = (error?: Error) => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      if (!error) return ready();
      // Not left running behind a failed start.
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      fail(error);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Server is ready")) settle();
    };
    const onExit = (code: number | null) => settle(new Error(`nats-server exited with ${code}:\n${output}`));
    const timer = setTimeout(
      () => settle(new Error(`nats-server not ready after ${READY_TIMEOUT_MS / 1000} s:\n${output}`)),
      READY_TIMEOUT_MS,
    );
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
  });
  return child;
}

/**
 * Spawns nats-server with JetStream at `host:port` on the store `storeDir`, in a process group of
 * its own: a Ctrl-C reaches the launcher, which stops the services before NATS. Through setpriv
 * it gets SIGUSR2 (lame duck, then exit: see `LAME_DUCK`) when the process that started it
 * dies, however it died (SIGKILL, a crash, a signal before its handlers were set), so no
 * nats-server outlives its launcher. Its output is read (a full pipe would block it); what it
 * prints is the caller's to use or drop.
 */
function spawnNatsServer(
  binary: string,
  { host, port, storeDir, configFile }: NatsServerOptions,
): ChildProcess {
  const args = ["-c", configFile, "-a", host, "-p", String(port), "-js", "-sd", storeDir];
  const [file, argv] = setpriv
    ? [setpriv, ["--pdeathsig", "SIGUSR2", "--", binary, ...args]]
    : [binary, args];
  const child = spawn(file, argv, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.resume();
  child.stderr?.resume();
  return child;
}
