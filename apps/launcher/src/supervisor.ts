import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ServiceName } from "./config.ts";

/**
 * Every process runs the container's entry point with SERVICE set: built JavaScript under plain
 * node (dist/service.js beside dist/cli.js); under `pnpm dev` the source, with the loader this
 * process was started with (process.execArgv).
 */
const serviceEntry = fileURLToPath(
  new URL(`./service${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
const MAX_BACKOFF_MS = 5000;

interface Instance {
  label: string;
  service: ServiceName;
  child: ChildProcess | undefined;
  restarts: number;
  env: Record<string, string>;
}

/**
 * Runs each service as its own process, prefixes its output with its name, restarts it when it
 * crashes (with backoff), and stops everything on request. The current process ids are written
 * to DATA_DIR/run/processes.json, so operators and tests can find them.
 */
export class Supervisor {
  private readonly instances: Instance[] = [];
  private stopping = false;

  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly dataDir: string,
  ) {}

  /** Starts `replicas` processes; `envFor(replica)` adds per-replica variables (e.g. a port). */
  start(
    service: ServiceName,
    replicas: number,
    envFor: (replica: number) => Record<string, string> = () => ({}),
  ): void {
    for (let replica = 1; replica <= replicas; replica++) {
      const label = replicas > 1 ? `${service}#${replica}` : service;
      const instance: Instance = { label, service, child: undefined, restarts: 0, env: envFor(replica) };
      this.instances.push(instance);
      this.spawn(instance);
    }
  }

  private spawn(instance: Instance): void {
    const child = spawn(process.execPath, [...process.execArgv, serviceEntry], {
      env: { ...this.env, ...instance.env, SERVICE: instance.service, SERVICE_INSTANCE: instance.label },
      stdio: ["ignore", "pipe", "pipe"],
    });
    instance.child = child;
    const started = Date.now();
    prefixLines(child.stdout, instance.label, process.stdout);
    prefixLines(child.stderr, instance.label, process.stderr);
    child.once("exit", (code, signal) => {
      instance.child = undefined;
      this.writeProcessFile();
      if (this.stopping) return;
      // A process that ran a while gets an immediate restart; one that keeps crashing backs off.
      if (Date.now() - started > 10_000) instance.restarts = 0;
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** instance.restarts++);
      console.error(`[launcher] ${instance.label} exited (${signal ?? code}); restarting in ${delay} ms`);
      setTimeout(() => !this.stopping && this.spawn(instance), delay);
    });
    this.writeProcessFile();
  }

  private writeProcessFile(): void {
    const processes: Record<string, number[]> = {};
    for (const { service, child } of this.instances) {
      processes[service] ??= [];
      if (child?.pid && child.exitCode === null) processes[service].push(child.pid);
    }
    const file = join(this.dataDir, "run", "processes.json");
    mkdirSync(dirname(file), { recursive: true });
    const natsUrl = this.env.NATS_URL;
    writeFileSync(file, JSON.stringify({ launcher: process.pid, natsUrl, processes }, null, 2));
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

function prefixLines(stream: NodeJS.ReadableStream | null, label: string, out: NodeJS.WritableStream): void {
  if (!stream) return;
  createInterface({ input: stream }).on("line", (line) => out.write(`[${label}] ${line}\n`));
}
