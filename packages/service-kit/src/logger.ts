import { type DestinationStream, type Logger, pino } from "pino";

export type { DestinationStream, Logger } from "pino";

/** Paths pino masks wherever they appear in a log object. Secrets never reach a log line. */
const redactPaths = [
  "password",
  "*.password",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "key",
  "*.key",
  "authorization",
  "*.authorization",
  "headers.authorization",
  'headers["x-api-key"]',
  "email",
  "*.email",
  "phone",
  "*.phone",
];

let stdout: DestinationStream | undefined;

/**
 * Standard output, written asynchronously: a request never waits for its log line to reach the
 * reader of the pipe (the launcher, a log shipper), and lines logged while a write is under way
 * go out together in the next one. One writer per process, shared by all its loggers, so lines
 * of services sharing a process never interleave; what is still buffered is written at exit.
 */
function sharedStdout(): DestinationStream {
  if (!stdout) {
    const destination = pino.destination({ dest: 1, sync: false });
    // No listener would make a write to a reader that is gone an uncaught error.
    destination.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EPIPE") abandonStdout();
    });
    stdout = destination;
  }
  return stdout;
}

/**
 * Stops writing to standard output once its reader is gone (a write failed with EPIPE, or the
 * launcher that reads it exited): later lines are dropped, and so is the flush pino makes at exit.
 * That flush (sonic-boom 4's `flushSync`, which pino 10 uses) retries a write that fails with
 * EPIPE forever, so a process whose reader died could never exit.
 */
export function abandonStdout(): void {
  const destination = stdout as (DestinationStream & { flushSync?: () => void; flush?: unknown }) | undefined;
  if (!destination) return;
  destination.write = () => true;
  destination.flushSync = () => {};
  destination.flush = (done?: (error?: Error) => void) => done?.();
}

/** A JSON logger whose every line names the service; to stdout unless given a destination. */
export function createLogger(service: string, level = "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service },
    redact: { paths: redactPaths, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(options, destination ?? sharedStdout());
}
