import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runNatsServer } from "@cheese/launcher/nats-server";
import type { RunningSystem } from "./system.ts";

/**
 * Crashing and restarting the nats-server that `pnpm start` started for a system (launcher mode,
 * NATS_URL unset): its pid and URL are in DATA_DIR/run/processes.json, its JetStream store is
 * DATA_DIR/nats. The launcher does not restart nats-server itself, so the test does it, as an
 * operator's supervisor (systemd, Kubernetes) would: same binary on PATH, same address and port,
 * same store directory, so streams, consumers and key-value buckets come back from disk.
 */
export class NatsControl {
  private restarted: ChildProcess | undefined;

  constructor(private readonly system: RunningSystem) {}

  /** The pid of the nats-server now serving the system. */
  pid(): number {
    if (this.restarted?.pid) return this.restarted.pid;
    const { natsPid } = readProcesses(this.system);
    if (!natsPid) throw new Error("the launcher started no nats-server (NATS_URL set, or one process)");
    return natsPid;
  }

  /** SIGKILLs nats-server (no flush, no goodbye to clients) and waits until the process is gone. */
  async kill(): Promise<void> {
    const pid = this.pid();
    process.kill(pid, "SIGKILL");
    const deadline = Date.now() + 10_000;
    while (isAlive(pid)) {
      if (Date.now() > deadline) throw new Error(`nats-server ${pid} still alive 10 s after SIGKILL`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Starts nats-server again on the same port and store; resolves once it says it is ready. */
  async restart(): Promise<void> {
    const url = new URL(this.system.natsUrl());
    this.restarted = await runNatsServer("nats-server", {
      host: url.hostname,
      port: Number(url.port),
      storeDir: join(this.system.dataDir, "nats"),
    });
  }

  /** Stops the nats-server this control started (call after the system has stopped). */
  async stop(): Promise<void> {
    const child = this.restarted;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
}

function readProcesses(system: RunningSystem): { natsPid?: number } {
  return JSON.parse(readFileSync(join(system.dataDir, "run", "processes.json"), "utf8"));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
