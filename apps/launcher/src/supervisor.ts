import { type ChildProcess, spawn } from "node:child_process";
import { extname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { CONFIG_EXIT_CODE, type Logger, replaceFile } from "@cheese/service-kit/launch";
import type { ServiceName } from "./config.ts";
import type { RunningNats } from "./nats-server.ts";
import { launcherNodeOptions, processNodeOptions } from "./node-options.ts";
import { type LineWriter, onWholeLines } from "./output.ts";

/**
 * Every process runs the container's entry point with SERVICE set: built JavaScript under plain
 * node (dist/service.js beside dist/cli.js); under `pnpm dev` the source, with the loader this
 * process was started with (process.execArgv). SERVICE names the services it runs (comma
 * separated). Its V8 options come first (node-options.ts), so a flag the launcher was started
 * with (a benchmark's) wins; the launcher's own (`launcherNodeOptions`) are not passed on.
 */
const serviceEntry = fileURLToPath(
  new URL(`./service${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
const launcherFlags = launcherNodeOptions.split(" ");
const MAX_BACKOFF_MS = 5000;
/**
 * Lines of a process's stderr kept since its start, to repeat why it refused its configuration
 * or why it exited.
 */
const KEPT_STDERR_LINES = 20;

interface Instance {
  label: string;
  /** Its number among the replicas of its services, when there are several. */
  replica?: number;
  /** The network namespace it runs in and its address there (`LAUNCH_HOSTS=netns`). */
  netns?: string;
  address?: string;
  /** Its URL, for a nats-server. */
  url?: string;
  /** The services it runs; none for nats-server. */
  services: readonly ServiceName[];
  /** Starts it (again). */
  run(): ChildProcess;
  /** A service's lines are passed on; nats-server's are kept only to say why it exited. */
  passOutput: boolean;
  child: ChildProcess | undefined;
  restarts: number;
  stderr: string[];
}

export interface SupervisorOptions {
  env: Record<string, string | undefined>;
  dataDir: string;
  /** The nats-servers the launcher started, if any: restarted like a service, stopped last. */
  nats?: readonly RunningNats[];
  write: LineWriter;
  logger: Logger;
  /** A process exited with CONFIG_EXIT_CODE: restarting cannot help. */
  onConfigError(label: string, message: string): void;
}

/**
 * Runs each service as its own process, passes its output on (see output.ts), restarts it when
 * it crashes (with backoff), and stops everything on request. A process that refuses its
 * configuration is not restarted: the launcher is told, and stops everything. The nats-server
 * the launcher started is watched the same way: restarted with the same backoff on the same
 * address and JetStream store (the services reconnect to it), stopped after the services.
 *
 * Each process gets its own process group, so a Ctrl-C on the terminal reaches the launcher
 * only, which stops the services before NATS; and an IPC channel, whose end (the launcher gone,
 * however it went) stops the service too. The current process ids are written to
 * DATA_DIR/run/processes.json, so operators and tests can find them.
 */
export class Supervisor {
  private readonly instances: Instance[] = [];
  private readonly nats: Instance[];
  private stopping = false;

  constructor(private readonly options: SupervisorOptions) {
    this.nats = (options.nats ?? []).map((nats) => {
      const instance: Instance = {
        label: nats.name,
        services: [],
        ...(nats.netns ? { netns: nats.netns } : {}),
        url: nats.url,
        run: () => nats.respawn(),
        passOutput: false,
        child: undefined,
        restarts: 0,
        stderr: [],
      };
      return instance;
    });
    for (const [i, instance] of this.nats.entries()) {
      this.watch(instance, (options.nats as RunningNats[])[i]!.process);
    }
  }

  /**
   * Starts `replicas` processes, each running `services`; `envFor(replica)` adds per-replica
   * variables (e.g. a port), `hostFor(replica)` the host it runs on (a network namespace).
   */
  start(
    services: readonly ServiceName[],
    replicas: number,
    {
      envFor = () => ({}),
      hostFor = () => undefined,
    }: {
      envFor?: (replica: number) => Record<string, string>;
      hostFor?: (replica: number) => { netns: string; address: string; exec: string[] } | undefined;
    } = {},
  ): void {
    const { env } = this.options;
    const nodeOptions = processNodeOptions(services).split(" ").filter(Boolean);
    for (let replica = 1; replica <= replicas; replica++) {
      const name = services.join("+");
      const label = replicas > 1 ? `${name}#${replica}` : name;
      const processEnv = {
        ...env,
        ...envFor(replica),
        SERVICE: services.join(","),
        SERVICE_INSTANCE: label,
      };
      const host = hostFor(replica);
      // On a host of its own: `ip netns exec <namespace>` execs node there (same pid).
      const [file, ...args]: string[] = [
        ...(host?.exec ?? []),
        process.execPath,
        ...nodeOptions,
        ...process.execArgv.filter((flag) => !launcherFlags.includes(flag)),
        serviceEntry,
      ];
      const instance: Instance = {
        label,
        ...(replicas > 1 ? { replica } : {}),
        ...(host ? { netns: host.netns, address: host.address } : {}),
        services,
        run: () =>
          spawn(file as string, args, {
            env: processEnv,
            stdio: ["ignore", "pipe", "pipe", "ipc"],
            detached: true,
          }),
        passOutput: true,
        child: undefined,
        restarts: 0,
        stderr: [],
      };
      this.instances.push(instance);
      this.watch(instance, instance.run());
    }
  }

  /** Follows a process just started: its output, its exit, and its restart. */
  private watch(instance: Instance, child: ChildProcess): void {
    const { write, logger } = this.options;
    instance.child = child;
    instance.stderr = [];
    const started = Date.now();
    if (child.stdout && instance.passOutput) {
      onWholeLines(child.stdout, (lines) => write(instance, lines, "stdout"));
    }
    if (child.stderr) {
      createInterface({ input: child.stderr }).on("line", (line) => {
        instance.stderr.push(line);
        if (instance.stderr.length > KEPT_STDERR_LINES) instance.stderr.shift();
        if (instance.passOutput) write(instance, line, "stderr");
      });
    }
    // "close": the process has exited and its output has been read to the end.
    child.once("close", (code, signal) => {
      instance.child = undefined;
      this.writeProcessFile();
      if (this.stopping) return;
      if (code === CONFIG_EXIT_CODE) {
        this.options.onConfigError(instance.label, instance.stderr.join("\n"));
        return;
      }
      // A process that ran a while gets an immediate restart; one that keeps crashing backs off.
      if (Date.now() - started > 10_000) instance.restarts = 0;
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** instance.restarts++);
      // What it said last on standard error, in the same record: a failed start's error (printed
      // over several lines, among every other process's) or nats-server's last lines.
      const said = instance.stderr.length > 0 ? { stderr: instance.stderr.join("\n") } : {};
      logger.error(
        { process: instance.label, exit: signal ?? code, restartInMs: delay, ...said },
        "process exited",
      );
      setTimeout(() => !this.stopping && this.watch(instance, instance.run()), delay);
    });
    this.writeProcessFile();
  }

  private writeProcessFile(): void {
    const processes: Record<string, number[]> = {};
    for (const { services, child } of this.instances) {
      for (const service of services) {
        processes[service] ??= [];
        if (child?.pid && running(child)) processes[service].push(child.pid);
      }
    }
    const pidOf = ({ child }: Instance) => (child?.pid && running(child) ? child.pid : undefined);
    const natsPid = this.nats[0] && pidOf(this.nats[0]);
    // Every process with where it runs: `pnpm cluster up --json` and the fault runs read these.
    const instances = this.instances.map((instance) => ({
      label: instance.label,
      services: instance.services,
      replica: instance.replica ?? 1,
      netns: instance.netns ?? null,
      address: instance.address ?? null,
      pid: pidOf(instance) ?? null,
    }));
    const nats = this.nats.map((instance) => ({
      name: instance.label,
      netns: instance.netns ?? null,
      pid: pidOf(instance) ?? null,
      url: instance.url,
    }));
    const record = {
      launcher: process.pid,
      natsUrl: this.options.env.NATS_URL,
      natsPid,
      processes,
      instances,
      nats,
    };
    // Replaced whole: tests and operators read it while processes come and go.
    replaceFile(join(this.options.dataDir, "run", "processes.json"), JSON.stringify(record, null, 2));
  }

  /** SIGTERM to every service's process, then to nats-server; SIGKILL to those still running after the deadline. */
  async stop(deadlineMs = 8_000): Promise<void> {
    this.stopping = true;
    await Promise.all(this.instances.map(({ child }) => terminate(child, deadlineMs)));
    await Promise.all(this.nats.map(({ child }) => terminate(child, deadlineMs)));
  }
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** SIGTERM, then SIGKILL after `deadlineMs`; resolves once the process has exited. */
async function terminate(child: ChildProcess | undefined, deadlineMs: number): Promise<void> {
  if (!child || !running(child)) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), deadlineMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
