import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { CONFIG_EXIT_CODE, ConfigError } from "@cheese/service-kit/launch";
import Database from "better-sqlite3";
import { DATA_DIR_LOCK, takeDataDir } from "./data-dir.ts";

/**
 * `pnpm backup <dir>` and `pnpm restore <dir>`: a consistent copy of the embedded stores under
 * DATA_DIR, taken while the system serves writes, and its restore into an empty DATA_DIR. What is
 * copied, in which order, and what is not (and why): docs/operations.md, "Backup and restore".
 */

/**
 * The services with an event store under DATA_DIR/<service>/events.sqlite, consumers before the
 * producers they consume: notification (every service's events), customer (ordering's), ordering
 * (catalogue's), catalogue. Each copy is later than the ones before it, so whatever a consumer's
 * copy recorded of an event (a webhook's fan-out and deliveries) is of an event in its producer's
 * copy; what a producer's copy holds beyond that is republished after a restore and handled then.
 */
const EVENT_STORES = ["notification", "customer", "ordering", "catalogue"] as const;
/**
 * Key files under DATA_DIR, copied after the event stores. Not the customer service's token-signing key
 * (`customer/jwt-signing-key.json`): the token revocations live in NATS, which is not copied, so
 * the restored system signs with a key of its own and every token issued before the restore
 * stops working; nothing signed out before the backup can come back.
 */
const KEY_FILES = ["notification/webhook-secrets.key", "dev-credentials.json"];
/** The customers' personal-data keys, one file each. */
const CUSTOMER_KEYS = "customer/keys";
/** The blob store's records and data (blobs/blobs/<h:2>/<h>.json and `<h>.<file>`, the data it names). */
const BLOB_RECORDS = "blobs/blobs";
/** Blobs that are derived state, rebuilt from the events: the notification's schedule snapshot. */
const DERIVED_BLOBS = new Set([blobHash("notification/schedule-snapshot.json")]);
/** What `pnpm backup` writes last: a backup without it is incomplete. */
const MANIFEST = "backup.json";

interface Manifest {
  format: 1;
  /** When the backup began: every write acknowledged before it is in the copy. */
  began: string;
  finished: string;
  eventStores: string[];
  files: number;
}

/** Copies DATA_DIR's embedded stores and keys into `target` (which must not exist or be empty). */
async function backup(dataDir: string, target: string): Promise<Manifest> {
  const began = new Date().toISOString();
  if (!existsSync(dataDir)) throw new ConfigError(`DATA_DIR ${dataDir} does not exist: nothing to back up`);
  assertEmpty(target, "the backup directory");
  mkdirSync(target, { recursive: true });
  // 1. The event stores, each through SQLite's online backup API: a consistent copy of every
  // committed transaction as of the moment it ends, while the writer goes on.
  const eventStores: string[] = [];
  for (const service of EVENT_STORES) {
    const file = join(dataDir, service, "events.sqlite");
    if (!existsSync(file)) continue;
    mkdirSync(join(target, service), { recursive: true });
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      await db.backup(join(target, service, "events.sqlite"));
    } finally {
      db.close();
    }
    eventStores.push(service);
  }
  // 2. Then what those events need, so that everything they name was made before it was copied:
  // a customer's key is made before its registration is appended, a blob before the event that
  // names it. Each is published whole (never half-written), so a plain copy is a whole file.
  let files = 0;
  for (const file of KEY_FILES) if (copyIfPresent(join(dataDir, file), join(target, file))) files++;
  for (const name of listFiles(join(dataDir, CUSTOMER_KEYS))) {
    if (copyIfPresent(join(dataDir, CUSTOMER_KEYS, name), join(target, CUSTOMER_KEYS, name))) files++;
  }
  files += copyBlobs(join(dataDir, BLOB_RECORDS), join(target, BLOB_RECORDS));
  const manifest: Manifest = { format: 1, began, finished: new Date().toISOString(), eventStores, files };
  writeFileSync(join(target, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** Fills an empty DATA_DIR from a backup, holding DATA_DIR's lock meanwhile. */
function restore(source: string, dataDir: string): Manifest {
  const manifestFile = join(source, MANIFEST);
  if (!existsSync(manifestFile)) {
    throw new ConfigError(`${source} is not a complete backup (no ${MANIFEST}): nothing restored`);
  }
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as Manifest;
  const lock = takeDataDir(dataDir, "pnpm restore");
  try {
    const present = readdirSync(dataDir).filter((name) => name !== DATA_DIR_LOCK);
    if (present.length > 0) {
      throw new ConfigError(
        `DATA_DIR ${dataDir} is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""}): pnpm restore fills an empty DATA_DIR only`,
      );
    }
    for (const file of listFiles(source, true)) {
      if (file === MANIFEST) continue;
      const to = join(dataDir, file);
      mkdirSync(dirname(to), { recursive: true, mode: file.startsWith(CUSTOMER_KEYS) ? 0o700 : 0o755 });
      copyFileSync(join(source, file), to);
    }
  } finally {
    lock.release();
  }
  return manifest;
}

/**
 * Copies each blob whose record is there: the record names the data file of its version, which
 * was written before the record; copied together, record after data. A blob replaced or deleted
 * meanwhile (its data file gone) is read again, or skipped when its record is gone too.
 */
function copyBlobs(from: string, to: string): number {
  let copied = 0;
  for (const file of listFiles(from, true)) {
    if (!file.endsWith(".json")) continue;
    const hash = file.split("/").at(-1)?.slice(0, -".json".length) ?? "";
    if (DERIVED_BLOBS.has(hash)) continue;
    for (let attempt = 0; attempt < 3; attempt++) {
      let record: { file: string };
      let recordText: string;
      try {
        recordText = readFileSync(join(from, file), "utf8");
        record = JSON.parse(recordText);
      } catch {
        break; // deleted meanwhile
      }
      const data = join(dirname(file), `${hash}.${record.file}`);
      if (!copyIfPresent(join(from, data), join(to, data))) continue;
      mkdirSync(dirname(join(to, file)), { recursive: true });
      writeFileSync(join(to, file), recordText);
      copied++;
      break;
    }
  }
  return copied;
}

function copyIfPresent(from: string, to: string): boolean {
  try {
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** The files under `dir` (relative paths), or none when it does not exist. */
function listFiles(dir: string, recursive = false): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

function assertEmpty(dir: string, what: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory() || readdirSync(dir).length > 0) {
    throw new ConfigError(`${what} ${dir} is not empty: choose a new one`);
  }
}

function blobHash(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

async function main(): Promise<void> {
  const [command, dir] = process.argv.slice(2);
  const dataDir = resolve(process.env.DATA_DIR || "./.data");
  if ((command !== "backup" && command !== "restore") || !dir) {
    console.error(
      "usage: pnpm backup <dir> | pnpm restore <dir>   (DATA_DIR: the system's data, default ./.data)",
    );
    process.exit(64);
  }
  const target = resolve(dir);
  if (command === "backup") {
    const made = await backup(dataDir, target);
    console.log(
      `backed up DATA_DIR ${dataDir} into ${target}: event stores of ${made.eventStores.join(", ")} and ${made.files} files, as of ${made.began}`,
    );
  } else {
    const made = restore(target, dataDir);
    console.log(
      `restored ${target} (backup begun ${made.began}) into DATA_DIR ${dataDir}: pnpm start rebuilds the read models`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(error instanceof ConfigError ? CONFIG_EXIT_CODE : 1);
});
