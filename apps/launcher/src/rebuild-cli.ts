import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { NoRespondersError, operatorRequest, RemoteError, RequestTimeoutError } from "@cheese/messaging";
import { seedFileName } from "@cheese/messaging/permissions";
import { type RebuildReply, rebuildSubject } from "@cheese/service-kit";
import { monitorSeedFile } from "./nats-identities.ts";

/**
 * `pnpm rebuild <service> <projection>`: asks a running system to rebuild one projection of a
 * service beside its live read models (docs/operations.md, "Rebuilding a projection"). One
 * replica of the service does it; reads keep being answered meanwhile and switch to the rebuilt
 * read models once they have caught up. Waits for that and prints the outcome; the progress is in
 * the service's log and `cheese_projection_rebuild_progress_ratio`.
 *
 * Reaches the system's NATS as the operators' identity (`monitor`): with NATS_URL unset, the one
 * `pnpm start` runs on DATA_DIR (its URL in DATA_DIR/run/processes.json, the seed in
 * DATA_DIR/nats-identities); with NATS_URL set, that one, with `monitor.nk` from the
 * NATS_CREDENTIALS directory if given.
 */
const USAGE = 64; // EX_USAGE
const UNAVAILABLE = 69; // EX_UNAVAILABLE
/** A rebuild of millions of events takes minutes; the request waits this long for its end. */
const TIMEOUT_MS = 60 * 60_000;

function fail(code: number, message: string): never {
  console.error(message);
  process.exit(code);
}

function target(): { servers: string; seedFile?: string } {
  const natsUrl = process.env.NATS_URL;
  if (natsUrl) {
    const credentials = process.env.NATS_CREDENTIALS;
    return credentials
      ? { servers: natsUrl, seedFile: join(credentials, seedFileName("monitor")) }
      : { servers: natsUrl };
  }
  const dataDir = resolve(process.env.DATA_DIR || "./.data");
  const processes = join(dataDir, "run", "processes.json");
  let servers: string | undefined;
  try {
    servers = (JSON.parse(readFileSync(processes, "utf8")) as { natsUrl?: string }).natsUrl;
  } catch {
    fail(
      UNAVAILABLE,
      `no system is running on DATA_DIR ${dataDir} (no ${processes}): start it with pnpm start`,
    );
  }
  if (!servers)
    fail(
      UNAVAILABLE,
      `the system on DATA_DIR ${dataDir} runs without NATS (in one process): a restart rebuilds what changed`,
    );
  const seedFile = monitorSeedFile(dataDir);
  return existsSync(seedFile) ? { servers, seedFile } : { servers };
}

const [service, projection] = process.argv.slice(2);
if (!service || !projection)
  fail(USAGE, "usage: pnpm rebuild <service> <projection>   (e.g. pnpm rebuild catalogue cheeses)");
const { servers, seedFile } = target();
console.log(`asking a ${service} replica to rebuild ${projection} beside its live read models…`);
let reply: RebuildReply;
try {
  reply = (await operatorRequest({
    servers,
    ...(seedFile ? { nkeySeed: readFileSync(seedFile).subarray(0, 58) } : {}),
    subject: rebuildSubject(service),
    payload: { projection },
    timeoutMs: TIMEOUT_MS,
  })) as RebuildReply;
} catch (error) {
  if (error instanceof NoRespondersError)
    fail(UNAVAILABLE, `no ${service} replica answered on NATS at ${servers}`);
  if (error instanceof RequestTimeoutError)
    fail(
      UNAVAILABLE,
      `no answer within ${TIMEOUT_MS / 60_000} min: the rebuild may still be running (see the ${service} log)`,
    );
  if (error instanceof RemoteError) fail(1, `${service} refused: ${error.message}`);
  fail(UNAVAILABLE, `NATS at ${servers}: ${(error as Error).message}`);
}
if (!reply.ok) {
  // A projection it does not have is the command's mistake; one it has that failed is not.
  const known = reply.projections.includes(projection);
  fail(known ? 1 : USAGE, `${reply.error} (${service}'s projections: ${reply.projections.join(", ")})`);
}
console.log(
  `rebuilt ${reply.service} ${reply.projection}: version ${reply.version}, generation ${reply.generation}, ` +
    `${reply.events.toLocaleString("en-US")} events in ${(reply.ms / 1000).toFixed(1)} s; reads switched to it`,
);
