import { readFileSync } from "node:fs";
import { join } from "node:path";
import { acceptsConnections, processAlive } from "@cheese/testing";
import { expect } from "vitest";
import type { RunningSystem } from "./system.ts";

/**
 * Crashing the nats-server that `pnpm start` started for a system (launcher mode, NATS_URL unset)
 * and waiting for the launcher to start it again, as it restarts a crashed service: on the same
 * address and the same JetStream store (DATA_DIR/nats), so streams, consumers and key-value
 * buckets come back from disk. Its pid and URL are in DATA_DIR/run/processes.json.
 */
export class NatsControl {
  constructor(private readonly system: RunningSystem) {}

  /** The pid of the nats-server now serving the system, if one is running. */
  pid(): number | undefined {
    const { natsPid } = JSON.parse(readFileSync(join(this.system.dataDir, "run", "processes.json"), "utf8"));
    return natsPid;
  }

  /** SIGKILLs nats-server (no flush, no goodbye to clients), waits until it is gone; its pid. */
  async kill(): Promise<number> {
    const pid = this.pid();
    if (!pid) throw new Error("the launcher started no nats-server (NATS_URL set, or one process)");
    process.kill(pid, "SIGKILL");
    await expect.poll(() => processAlive(pid), { message: `nats-server ${pid} still alive` }).toBe(false);
    return pid;
  }

  /** Resolves once the launcher has started a nats-server in place of `killed`, accepting connections. */
  async restarted(killed: number, timeoutMs = 15_000): Promise<void> {
    const port = Number(new URL(this.system.natsUrl()).port);
    await expect
      .poll(
        async () => {
          const pid = this.pid();
          return pid !== undefined && pid !== killed && processAlive(pid) && (await acceptsConnections(port));
        },
        { timeout: timeoutMs, message: `the launcher did not restart nats-server on :${port}` },
      )
      .toBe(true);
  }
}
