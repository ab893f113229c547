import { type ChildProcess, spawn } from "node:child_process";
import { extname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { CONFIG_EXIT_CODE, type Logger, replaceFile } from "@cheese/service-kit/launch";
import type { ServiceName } from "./config.ts";
import { processNodeOptions } from "./node-options.ts";
import type { LineWriter } from "./output.ts";

/**
 * Every process runs the container's entry point with SERVICE set: built JavaScript under plain
 * node (dist/service.js beside dist/cli.js); under `pnpm dev` the source, with the loader this
 * process was started with (process.execArgv). SERVICE names the services it runs (comma
 * separated). Its V8 options come first (node-options.ts), so a flag the launcher was started
 * with (a benchmark's) wins.
 */
const serviceEntry = fileURLToPath(
  new URL(`./service${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
const MAX_BACKOFF_MS = 5000;
/** Lines of a process's stderr kept, to repeat why it refused its configuration. */
const KEPT_STDERR_LINES = 20;

interface Instance {
  label: string;
  /** Its number among the replicas of its services, when there are several. */
  replica?: number;
  services: readonly ServiceName[];
  child: ChildProcess | undefined;
  restarts: number;
  env: Record<string, string>;
  stderr: string[];
}

export interface SupervisorOptions {
  env: Record<string, string | undefined>;
  dataDir: string;
  /** The nats-server the launcher started, if any: listed in processes.json too. */
  natsPid?: number;
  write: LineWriter;
  logger: Logger;
  /** A process exited with CONFIG_EXIT_CODE: restarting cannot help. */
  onConfigError(label: string, message: string): void;
}

/**
 * Runs each service as its own process, passes its output on (see output.ts), restarts it when
 * it crashes (with backoff), and stops everything on request. A process that refuses its
 * configuration is not restarted: the launcher is told, and stops everything.
 *
 * Each process gets its own process group, so a Ctrl-C on the terminal reaches the launcher
 * only, which stops the services before NATS; and an IPC channel, whose end (the launcher gone,
 * however it went) stops the service too. The current process ids are written to
 * DATA_DIR/run/processes.json, so operators and tests can find them.
 */
export class Supervisor {
  private readonly instances: Instance[] = [];
  private stopping = false;

  constructor(private readonly options: SupervisorOptions) {}

  /**
   * Starts `replicas` processes, each running `services`; `envFor(replica)` adds per-replica
   * variables (e.g. a port).
   */
  start(
    services: readonly ServiceName[],
    replicas: number,
    envFor: (replica: number) => Record<string, string> = () => ({}),
  ): void {
    for (let replica = 1; replica <= replicas; replica++) {
      const name = services.join("+");
      const label = replicas > 1 ? `${name}#${replica}` : name;
      const instance: Instance = {
        label,
        ...(replicas > 1 ? { replica } : {}),
        services,
        child: undefined,
        restarts: 0,
        env: envFor(replica),
        stderr: [],
      };
      this.instances.push(instance);
      this.spawn(instance);
    }
  }

  private spawn(instance: Instance): void {
    const { env, write, logger } = this.options;
    const nodeOptions = processNodeOptions(instance.services).split(" ").filter(Boolean);
    const child = spawn(process.execPath, [...nodeOptions, ...process.execArgv, serviceEntry], {
      env: {
        ...env,
        ...instance.env,
        SERVICE: instance.services.join(","),
        SERVICE_INSTANCE: instance.label,
      },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      detached: true,
    });
    instance.child = child;
    instance.stderr = [];
    const started = Date.now();
    if (child.stdout) {
      createInterface({ input: child.stdout }).on("line", (line) => write(instance, line, "stdout"));
    }
    if (child.stderr) {
      createInterface({ input: child.stderr }).on("line", (line) => {
        instance.stderr.push(line);
        if (instance.stderr.length > KEPT_STDERR_LINES) instance.stderr.shift();
        write(instance, line, "stderr");
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
      logger.error({ process: instance.label, exit: signal ?? code, restartInMs: delay }, "process exited");
      setTimeout(() => !this.stopping && this.spawn(instance), delay);
    });
    this.writeProcessFile();
  }

  private writeProcessFile(): void {
    const processes: Record<string, number[]> = {};
    for (const { services, child } of this.instances) {
      for (const service of services) {
        processes[service] ??= [];
        if (child?.pid && child.exitCode === null) processes[service].push(child.pid);
      }
    }
    const { env, natsPid } = this.options;
    const record = { launcher: process.pid, natsUrl: env.NATS_URL, natsPid, processes };
    // Replaced whole: tests and operators read it while processes come and go.
    replaceFile(join(this.options.dataDir, "run", "processes.json"), JSON.stringify(record, null, 2));
  }

  /** SIGTERM to every process; SIGKILL to those still running after the deadline. */
  async stop(deadlineMs = 8_000): Promise<void> {
    this.stopping = true;
    const running = this.instances.flatMap(({ child }) => (child && child.exitCode === null ? [child] : []));
    await Promise.all(
      running.map(
        (child) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => child.kill("SIGKILL"), deadlineMs);
            child.once("exit", () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill("SIGTERM");
          }),
      ),
    );
  }
}
