// The SQLite event store's writer thread (a worker_threads Worker started by sqlite.ts, one per
// store). It owns the store's only writing connection and runs each group of writes the event
// loop sends it as ONE IMMEDIATE transaction: each write in its own savepoint, in the order asked
// for, with its own expected-revision check and its own outcome (a write to several streams: all
// of them in that one savepoint, all written or none), then the COMMIT and its fsync
// (synchronous = FULL). Only after the COMMIT returned does it answer, so the event loop, which
// meanwhile keeps serving reads on its own connection, acknowledges nothing that is not durable.
//
// Plain JavaScript on purpose: a worker is started from a file, and this one must load as it is
// from src/ (tests, tsx) and from dist/ (the build emits it as an entry of its own).
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { untilNotBusy } from "./busy-retry.js";

/**
 * @typedef {"no_stream" | "any" | "stream_exists" | number} ExpectedRevision
 * @typedef {[id: string, type: string, data: string, metadata: string, version: number]} SerialisedEvent
 * @typedef {{ kind: "append", stream: string, category: string, expected: ExpectedRevision, createdAt: string, events: SerialisedEvent[] }} Append
 * @typedef {Append
 *   | { kind: "appends", appends: Append[] }
 *   | { kind: "delete", stream: string, expected: ExpectedRevision }} Write
 * @typedef {{ wrongRevision?: { stream: string, expected: ExpectedRevision, actual: number | "no_stream" }, name: string, message: string, code?: string }} WriteError
 * @typedef {{ ok: true, value: unknown } | { ok: false, error: WriteError }} Outcome
 */

const port = parentPort;
if (!port) throw new Error("sqlite-writer.js runs as a worker thread of the SQLite event store");

const { file, busyTimeoutMs } = /** @type {{ file: string, busyTimeoutMs: number }} */ (workerData);
const db = new Database(file);
db.pragma("journal_mode = WAL");
// FULL fsyncs the WAL on every commit: an acknowledged append survives a crash or power loss.
db.pragma("synchronous = FULL");
// Other processes (replicas) write to the same file: wait for their lock instead of failing (and
// try again where SQLite refuses sooner: busy-retry.js). The wait blocks only this thread.
const busyTimeout = Number(busyTimeoutMs);
db.pragma(`busy_timeout = ${busyTimeout}`);
/** Sleeps this thread (a worker's own: the event loop is elsewhere). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const pause = (/** @type {number} */ ms) => {
  Atomics.wait(sleeper, 0, 0, ms);
};

/** @type {import("better-sqlite3").Statement<[string], { revision: number, deleted: number }>} */
const selectStream = db.prepare("SELECT revision, deleted FROM streams WHERE name = ?");
const insertEvent = db.prepare(
  `INSERT INTO events (stream, category, revision, id, type, data, metadata, created_at, version)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const upsertStream = db.prepare(
  `INSERT INTO streams (name, revision, deleted) VALUES (?, ?, 0)
   ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, deleted = 0`,
);
const markDeleted = db.prepare("UPDATE streams SET deleted = 1 WHERE name = ?");
const deleteEvents = db.prepare("DELETE FROM events WHERE stream = ?");
/** @type {import("better-sqlite3").Statement<[], { head: number | null }>} */
const selectHead = db.prepare("SELECT max(position) AS head FROM events");

/** A write refused because the stream is not at the revision its writer expected. */
class WrongRevision extends Error {
  /** @param {string} stream @param {ExpectedRevision} expected @param {number | "no_stream"} actual */
  constructor(stream, expected, actual) {
    super("wrong expected revision");
    this.stream = stream;
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * The stream's revision as callers see it (a deleted stream does not exist), and the last
 * revision ever written, from which numbering continues.
 * @param {string} stream
 */
function currentRevision(stream) {
  const row = selectStream.get(stream);
  if (!row) return { actual: /** @type {const} */ ("no_stream"), last: -1 };
  return { actual: row.deleted ? /** @type {const} */ ("no_stream") : row.revision, last: row.revision };
}

/** @param {string} stream @param {ExpectedRevision} expected @param {number | "no_stream"} actual */
function check(stream, expected, actual) {
  const ok =
    expected === "any" ||
    (expected === "no_stream" && actual === "no_stream") ||
    (expected === "stream_exists" && actual !== "no_stream") ||
    expected === actual;
  if (!ok) throw new WrongRevision(stream, expected, actual);
}

/** @param {Write} write */
function run(write) {
  // Several streams, one after the other: the first failure throws, and the savepoint (or the
  // transaction) this runs in takes back the streams already written.
  if (write.kind === "appends") return write.appends.map(run);
  const { actual, last } = currentRevision(write.stream);
  check(write.stream, write.expected, actual);
  if (write.kind === "delete") {
    deleteEvents.run(write.stream);
    markDeleted.run(write.stream);
    return undefined;
  }
  if (write.events.length === 0) {
    return { nextRevision: actual === "no_stream" ? -1 : actual, position: selectHead.get()?.head ?? -1 };
  }
  let revision = last;
  let position = -1;
  for (const [id, type, data, metadata, version] of write.events) {
    revision += 1;
    const result = insertEvent.run(
      write.stream,
      write.category,
      revision,
      id,
      type,
      data,
      metadata,
      write.createdAt,
      version,
    );
    position = Number(result.lastInsertRowid);
  }
  upsertStream.run(write.stream, revision);
  return { nextRevision: revision, position };
}

/** @param {unknown} error @returns {WriteError} */
function describe(error) {
  if (error instanceof WrongRevision) {
    return {
      wrongRevision: { stream: error.stream, expected: error.expected, actual: error.actual },
      name: error.name,
      message: error.message,
    };
  }
  const {
    name = "Error",
    message = String(error),
    code,
  } = /** @type {Partial<WriteError>} */ (error instanceof Error ? error : {});
  return { name, message, ...(typeof code === "string" ? { code } : {}) };
}

// Called at the top level: BEGIN IMMEDIATE ... COMMIT; called inside a transaction: a savepoint.
// IMMEDIATE takes the write lock before any revision is read, so each check and its inserts are
// atomic across processes too.
const transaction = db.transaction((/** @type {Write} */ write) => run(write));
const commitGroup = db.transaction((/** @type {Write[]} */ writes) =>
  writes.map((write) => {
    try {
      return /** @type {Outcome} */ ({ ok: true, value: transaction(write) });
    } catch (error) {
      if (!db.inTransaction) throw error; // the whole transaction is gone: nothing of it stands
      return /** @type {Outcome} */ ({ ok: false, error: describe(error) });
    }
  }),
);

/**
 * One group: every write's outcome, or, should the BEGIN or the COMMIT fail or SQLite end the
 * whole transaction under a failing statement (I/O error, disk full), the same error for all.
 * @param {Write[]} writes @returns {Outcome[]}
 */
function commit(writes) {
  try {
    return untilNotBusy(
      (leftMs) => {
        // A try after a refusal: SQLite's own wait for the lock ends within what is left.
        if (leftMs < busyTimeout) db.pragma(`busy_timeout = ${Math.ceil(leftMs)}`);
        try {
          if (writes.length === 1)
            return [{ ok: true, value: transaction.immediate(/** @type {Write} */ (writes[0])) }];
          return commitGroup.immediate(writes);
        } finally {
          if (leftMs < busyTimeout) db.pragma(`busy_timeout = ${busyTimeout}`);
        }
      },
      { timeoutMs: busyTimeout, now: () => performance.now(), pause },
    );
  } catch (error) {
    const failed = /** @type {Outcome} */ ({ ok: false, error: describe(error) });
    return writes.map(() => failed);
  }
}

port.on("message", (/** @type {{ writes: Write[] } | { close: true }} */ message) => {
  if ("close" in message) {
    db.close();
    port.close();
    return;
  }
  port.postMessage({ outcomes: commit(message.writes) });
});
