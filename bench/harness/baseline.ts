/** Starts the bare Hono baseline (`baseline-server.ts`) as its own process, and seeds it. */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Doc } from "./scenario.ts";
import { processUsage, type TreeUsage, underPid } from "./system.ts";

export interface Baseline {
  rootUrl: string;
  /** Memory and CPU of the baseline's process. */
  usage(): TreeUsage;
  seed(collections: Record<string, Doc[]>): Promise<void>;
  stop(): Promise<void>;
}

export async function startBaseline(): Promise<Baseline> {
  // The same loader this process runs under (tsx), so the server is TypeScript like the rest.
  const child: ChildProcess = fork(fileURLToPath(new URL("./baseline-server.ts", import.meta.url)), {
    execArgv: process.execArgv,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const next = <T>(key: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (message: Record<string, unknown>) => {
        if (!(key in message)) return;
        child.off("message", onMessage);
        child.off("exit", onExit);
        resolve(message[key] as T);
      };
      const onExit = (code: number | null) => reject(new Error(`the baseline exited (${code})`));
      child.on("message", onMessage);
      child.once("exit", onExit);
    });
  const port = await next<number>("port");
  return {
    rootUrl: `http://127.0.0.1:${port}`,
    usage: () => processUsage(underPid(child.pid!)),
    async seed(collections) {
      const seeded = next<boolean>("seeded");
      child.send({ seed: collections });
      await seeded;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
