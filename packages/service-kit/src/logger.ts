import { type Logger, pino } from "pino";

export type { Logger } from "pino";

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

export function createLogger(service: string, level = "info"): Logger {
  return pino({
    level,
    base: { service },
    redact: { paths: redactPaths, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
