import { ConfigError } from "./config.ts";
import { abandonStdout } from "./logger.ts";
import { releaseYoungGenerationWhenIdle } from "./young-generation.ts";

const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * The exit code of a process that refuses its configuration (EX_CONFIG of sysexits.h): a bad
 * variable, or a port already in use. Restarting cannot help, so the launcher stops everything
 * when a process exits with it, and an orchestrator's logs show the message above it.
 */
export const CONFIG_EXIT_CODE = 78;

/** A listen() that failed because another process holds the port, said in one line. */
export function portInUse(error: unknown, variable: string): ConfigError | undefined {
  const failure = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (failure?.code !== "EADDRINUSE") return undefined;
  const where = failure.port === undefined ? "" : ` ${failure.address ?? ""}:${failure.port}`;
  return new ConfigError(`${variable}:${where} is already in use by another process`);
}

/**
 * Runs something as a process: a bad configuration (or a port in use) prints its message and
 * exits with CONFIG_EXIT_CODE, any other failure to start exits 1; SIGTERM and SIGINT stop it
 * gracefully within 10 seconds, after which the process exits anyway. A process started with
 * an IPC channel (by the launcher) also stops when that channel closes, i.e. when its parent is
 * gone, so no service outlives the launcher: watched from the first moment, since a launcher
 * killed while this process is still starting (its port already answering) leaves it running
 * forever if the close is only listened for afterwards. Once started, the process gives its
 * young generation back whenever it is idle (young-generation.ts).
 */
export async function runAsProcess(start: () => Promise<{ stop(): Promise<void> }>): Promise<void> {
  const parentGone = process.channel
    ? new Promise<void>((resolve) => process.once("disconnect", resolve))
    : undefined;
  let running: { stop(): Promise<void> };
  try {
    running = await start();
  } catch (error) {
    const refused = error instanceof ConfigError ? error : portInUse(error, "a port");
    if (refused) {
      console.error(refused.message);
      process.exit(CONFIG_EXIT_CODE);
    }
    console.error(error);
    process.exit(1);
  }
  releaseYoungGenerationWhenIdle();
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
  if (parentGone) {
    void parentGone.then(() => {
      // The launcher read this process's standard output: nothing written there arrives any more.
      abandonStdout();
      shutdown("the launcher's exit");
    });
    process.channel?.unref();
  }
}
