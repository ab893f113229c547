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

/** A JSON logger whose every line names the service; to stdout unless given a destination. */
export function createLogger(service: string, level = "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service },
    redact: { paths: redactPaths, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}
