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

/** Lines are written once this many bytes are waiting (about a dozen access lines)... */
const WRITE_AT_BYTES = 4096;
/** ...or this long after the last write, whichever comes first. */
const WRITE_WITHIN_MS = 100;

/**
 * Standard output, written asynchronously: a request never waits for its log line to reach the
 * reader of the pipe (the launcher, a log shipper). Lines are gathered into writes of
 * `WRITE_AT_BYTES`, and what waits is written every `WRITE_WITHIN_MS`: under load the gateway
 * logs a line per request, and a write per line (a thread-pool round trip in the process, a read
 * and a write in the launcher) cost more than the request itself in places. So a line reaches
 * the reader at most `WRITE_WITHIN_MS` late, and a process killed with SIGKILL loses at most
 * that much of its last lines. One writer per process, shared by all its loggers, so lines of
 * services sharing a process never interleave; what is still buffered is written at exit.
 */
function sharedStdout(): DestinationStream {
  if (!stdout) {
    const destination = pino.destination({
      dest: 1,
      sync: false,
      minLength: WRITE_AT_BYTES,
      periodicFlush: WRITE_WITHIN_MS,
    });
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

let isoTimeAt = Number.NaN;
let isoTimeText = "";

/**
 * pino's `isoTime` (`,"time":"<ISO 8601>"`), made once per millisecond: a busy gateway writes an
 * access line per request, a score of them in the same millisecond, and formatting the date for
 * each was ~1 % of its CPU per get.
 */
function isoTime(): string {
  const now = Date.now();
  if (now !== isoTimeAt) {
    isoTimeAt = now;
    isoTimeText = `,"time":"${new Date(now).toISOString()}"`;
  }
  return isoTimeText;
}

/** A JSON logger whose every line names the service; to stdout unless given a destination. */
export function createLogger(service: string, level = "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service },
    redact: { paths: redactPaths, censor: "[redacted]" },
    timestamp: isoTime,
  };
  return pino(options, destination ?? sharedStdout());
}
