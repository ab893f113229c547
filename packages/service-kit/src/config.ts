// The scheme check alone: the package's main entry loads SQLite, which the launcher does not need.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { clientConnectionString, EVENT_STORE_SCHEMES } from "@cheese/event-store/connection-string";
// The identities' table alone: the package's main entry loads the NATS client.
import { seedFileName } from "@cheese/messaging/permissions";
import { z } from "zod";
import { duration } from "./duration.ts";

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v));
/** One URL, or several separated by commas (the servers of one NATS cluster). */
const optionalUrls = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(
    z
      .string()
      .refine((v) => v.split(",").every((url) => z.url().safeParse(url.trim()).success), {
        message: "not a URL, nor a comma-separated list of URLs",
      })
      .optional(),
  );
/** A URL, or unset (empty or absent). */
export const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(z.url().optional());

/**
 * Variables every service reads (docs/operations.md "Running it"). Production adapters are chosen
 * when their variable is set; otherwise the embedded ones under DATA_DIR.
 */
export const baseConfigShape = {
  DATA_DIR: z.string().min(1).default("./.data"),
  /** A NATS server, or every server of a NATS cluster, comma-separated. */
  NATS_URL: optionalUrls,
  /**
   * The directory of the services' NATS identities: `<service>.nk` holds the nkey seed a service
   * connects as (each reads only its own); unset: no credentials (a NATS without authorization).
   */
  NATS_CREDENTIALS: optionalText,
  /** Copies of EVENTS and of every key-value bucket JetStream keeps (more than 1 needs a cluster). */
  NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** EVENTS keeps an integration event this long at most (a consumer further behind misses it). */
  NATS_EVENTS_MAX_AGE: duration("168h").pipe(z.number().min(60_000, "must be at least 1m")),
  /** EVENTS holds this many MiB at most; past it, its oldest events are removed. */
  NATS_EVENTS_MAX_MB: z.coerce.number().int().min(1).max(1_048_576).default(1024),
  /** KurrentDB (EventStoreDB) connection string, `kurrentdb://…` or `esdb://…`. */
  EVENTSTORE_URL: optionalText.refine((v) => v === undefined || clientConnectionString(v) !== undefined, {
    message: `a KurrentDB connection string starts with ${EVENT_STORE_SCHEMES}`,
  }),
  MONGO_URL: optionalText,
  MONGO_DATABASE: z.string().min(1).default("cheese_store"),
  S3_ENDPOINT: optionalUrl,
  S3_ACCESS_KEY: optionalText,
  S3_SECRET_KEY: optionalText,
  S3_BUCKET: z.string().min(3).default("cheese-store"),
  /** The bucket's region (request signatures carry it). */
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** Deadline of every MinIO/S3 call; past it the client gets 503. */
  S3_TIMEOUT: duration("10s"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Port of the service's own /healthz and /readyz; 0 picks a free one. */
  HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  /** Address of the health endpoints; 0.0.0.0 in containers so probes can reach them. */
  HEALTH_HOST: z.string().min(1).default("127.0.0.1"),
  /** Deadline of every internal request. */
  RPC_TIMEOUT: duration("5s"),
  /**
   * How long an integration event whose consumer keeps failing it is retried (backoff up to
   * 5 min) before it moves to the dead letters; counted from its first failure.
   */
  DEAD_LETTER_AFTER: duration("24h").pipe(z.number().min(1000, "at least 1s")),
  /**
   * How long the active outbox relay's lease stands unrenewed before a standby replica of the
   * service takes over its relaying (renewed every third of it; a clean stop hands over at once).
   */
  RELAY_LEASE: duration("5s").pipe(z.number().min(1000, "at least 1s")),
  /** OTLP/HTTP collector to send traces to (`<url>/v1/traces`); unset: traces are not recorded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
};
export const baseConfigSchema = z.object(baseConfigShape);
export type BaseConfig = z.infer<typeof baseConfigSchema>;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/**
 * Parses environment variables; a bad value throws a ConfigError naming every variable at fault.
 * S3 credentials are required together with S3_ENDPOINT.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  const config = result.data as z.infer<S> & Partial<BaseConfig>;
  if (config.S3_ENDPOINT && (!config.S3_ACCESS_KEY || !config.S3_SECRET_KEY)) {
    throw new ConfigError(
      "invalid configuration:\n  S3_ACCESS_KEY, S3_SECRET_KEY: required when S3_ENDPOINT is set",
    );
  }
  return config;
}

/**
 * What is wrong with `service`'s NATS identity in the NATS_CREDENTIALS directory `dir`, if
 * anything: a missing or unreadable file, or one that holds no user nkey seed (`SU…`).
 */
export function natsSeedProblem(dir: string, service: string): string | undefined {
  const file = join(dir, seedFileName(service));
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return `cannot read ${file} (${(error as NodeJS.ErrnoException).code})`;
  }
  // Never the file's contents in the message: it is a secret.
  return /^SU[A-Z2-7]{56}\s*$/.test(text) ? undefined : `${file} holds no user nkey seed (SU…)`;
}
