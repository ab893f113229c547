import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type BlobStore, createFileBlobStore } from "@cheese/blob-store";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import {
  BusAuthorizationError,
  connectNatsBus,
  type DeadLetter,
  type MessageBus,
  ReplicasRefusedError,
} from "@cheese/messaging";
import { seedFileName } from "@cheese/messaging/permissions";
import type { ReadModelStore } from "@cheese/read-models";
import { type BaseConfig, ConfigError, natsSeedProblem } from "./config.ts";
import type { Logger } from "./logger.ts";
import { countDeadLetter } from "./metrics.ts";

/** Which adapter each port got, for the start-up log line and /readyz. */
export interface AdapterChoice {
  eventStore: "eventstoredb" | "sqlite";
  readModels: "mongodb" | "memory";
  bus: "nats" | "in-process";
  blobs: "minio" | "filesystem";
}

export function serviceDataDir(config: BaseConfig, service: string): string {
  const dir = resolve(config.DATA_DIR, service);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * The deadline of one call to the event store or the read models: under the RPC deadline, so that
 * a service still answers 503 itself (and gives up the call) before the gateway stops waiting.
 */
function dependencyDeadline(config: BaseConfig): number {
  return Math.max(100, Math.floor(config.RPC_TIMEOUT * 0.8));
}

// The production adapters are imported when chosen: their clients (gRPC, the MongoDB driver,
// MinIO's SDK) take a good part of a second of CPU to load, which the embedded setup never pays.

/** EventStoreDB when EVENTSTORE_URL is set, else one SQLite file per service under DATA_DIR. */
export async function openEventStore(config: BaseConfig, service: string): Promise<EventStore> {
  if (config.EVENTSTORE_URL) {
    const { createEventStoreDbStore } = await import("@cheese/event-store/eventstoredb");
    return createEventStoreDbStore({
      connectionString: config.EVENTSTORE_URL,
      deadlineMs: dependencyDeadline(config),
    });
  }
  return createSqliteEventStore({
    file: join(serviceDataDir(config, service), "events.sqlite"),
    // A write waits this long for another replica's lock on the file, then answers 503.
    busyTimeoutMs: dependencyDeadline(config),
  });
}

/**
 * MongoDB when MONGO_URL is set, else in-memory collections, loaded at start from their snapshots
 * under DATA_DIR/<service>/read-models and brought up to date from the event store.
 */
export async function openReadModels(config: BaseConfig, service: string): Promise<ReadModelStore> {
  if (config.MONGO_URL) {
    const { createMongoReadModels } = await import("@cheese/read-models/mongo");
    return createMongoReadModels({
      url: config.MONGO_URL,
      database: `${config.MONGO_DATABASE}_${service}`,
      timeoutMs: dependencyDeadline(config),
    });
  }
  // Imported here too: a service without read models (the gateway) does not load the query engine.
  const { createMemoryReadModels } = await import("@cheese/read-models");
  return createMemoryReadModels({ snapshotDir: join(serviceDataDir(config, service), "read-models") });
}

/** MinIO/S3 when S3_ENDPOINT is set, else files under DATA_DIR/blobs. */
export async function openBlobStore(config: BaseConfig): Promise<BlobStore> {
  if (config.S3_ENDPOINT) {
    const { createMinioBlobStore } = await import("@cheese/blob-store/minio");
    return createMinioBlobStore({
      endPoint: config.S3_ENDPOINT,
      accessKey: config.S3_ACCESS_KEY ?? "",
      secretKey: config.S3_SECRET_KEY ?? "",
      bucket: config.S3_BUCKET,
      region: config.S3_REGION,
      timeoutMs: config.S3_TIMEOUT,
    });
  }
  const dir = resolve(config.DATA_DIR, "blobs");
  mkdirSync(dir, { recursive: true });
  return createFileBlobStore({ dir });
}

/**
 * NATS when NATS_URL is set; a process started on its own needs it. Calls that pass a partial
 * configuration (tests) get the bus's defaults for what they leave out.
 */
export async function connectBus(config: BaseConfig, service: string, logger?: Logger): Promise<MessageBus> {
  if (!config.NATS_URL) {
    throw new Error(
      "NATS_URL is not set: a service started as its own process needs NATS (pnpm start sets it up)",
    );
  }
  const nkeySeed = config.NATS_CREDENTIALS ? readNatsSeed(config.NATS_CREDENTIALS, service) : undefined;
  try {
    return await connectNatsBus({
      url: config.NATS_URL.split(",").map((url) => url.trim()),
      ...(nkeySeed ? { nkeySeed } : {}),
      name: service,
      ...busOptions(config),
      replicas: config.NATS_REPLICAS,
      eventsMaxAgeMs: config.NATS_EVENTS_MAX_AGE,
      eventsMaxBytes:
        config.NATS_EVENTS_MAX_MB === undefined ? undefined : config.NATS_EVENTS_MAX_MB * 1024 * 1024,
      ...(logger ? { logger } : {}),
    });
  } catch (error) {
    // A replica count NATS cannot give is the operator's setting, refused like a bad variable.
    if (error instanceof ReplicasRefusedError)
      throw new ConfigError(
        `NATS_REPLICAS=${error.replicas} is refused: ${error.message} (NATS_URL must name a cluster of at least that many JetStream servers)`,
      );
    if (error instanceof BusAuthorizationError)
      throw new ConfigError(
        `${error.message} (NATS_CREDENTIALS ${config.NATS_CREDENTIALS ? `is ${config.NATS_CREDENTIALS}` : "is unset"})`,
      );
    throw error;
  }
}

/**
 * The nkey seed of `service`'s NATS identity: `<service>.nk` in the NATS_CREDENTIALS directory
 * (`natsSeedProblem` says what is wrong with it, before anything starts).
 */
function readNatsSeed(dir: string, service: string): Uint8Array {
  const problem = natsSeedProblem(dir, service);
  if (problem) throw new ConfigError(`invalid configuration:\n  NATS_CREDENTIALS: ${problem}`);
  return readFileSync(join(dir, seedFileName(service))).subarray(0, 58);
}

/** What every bus of a process is made with, NATS or in-process: dead letters, timed and counted. */
export function busOptions(config: Pick<BaseConfig, "DEAD_LETTER_AFTER">): {
  deadLetterAfterMs: number;
  onDeadLetter: (letter: DeadLetter) => void;
} {
  return { deadLetterAfterMs: config.DEAD_LETTER_AFTER, onDeadLetter: countDeadLetter };
}

export function describeAdapters(
  config: BaseConfig,
  busKind: AdapterChoice["bus"],
  needs: { eventStore?: boolean; readModels?: boolean; blobs?: boolean },
): Partial<AdapterChoice> {
  return {
    bus: busKind,
    ...(needs.eventStore ? { eventStore: config.EVENTSTORE_URL ? "eventstoredb" : "sqlite" } : {}),
    ...(needs.readModels ? { readModels: config.MONGO_URL ? "mongodb" : "memory" } : {}),
    ...(needs.blobs ? { blobs: config.S3_ENDPOINT ? "minio" : "filesystem" } : {}),
  } as Partial<AdapterChoice>;
}
