import { ConfigError } from "./config.ts";

const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * Runs something as a process: a bad configuration prints its message and exits 1; SIGTERM
 * and SIGINT stop it gracefully within 10 seconds, after which the process exits anyway.
 */
export async function runAsProcess(start: () => Promise<{ stop(): Promise<void> }>): Promise<void> {
  let running: { stop(): Promise<void> };
  try {
    running = await start();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    console.error(error);
    process.exit(1);
  }
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    const timer = setTimeout(() => {
      console.error(`still stopping ${SHUTDOWN_DEADLINE_MS} ms after ${signal}; exiting`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    timer.unref();
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}
