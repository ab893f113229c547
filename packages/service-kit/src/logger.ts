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
  stdout ??= pino.destination({ dest: 1, sync: false });
  return stdout;
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
