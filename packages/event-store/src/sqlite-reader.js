// The SQLite event store's reader thread (a worker_threads Worker started by sqlite.ts while a
// subscription catches up on a long history, stopped once none does). On its own connection it
// reads the next page of events while the event loop applies the page before it, and hands the
// page over as ONE JSON text of the events as `RecordedEvent`s: the stored data and metadata are
// JSON text already and go in as they are, so the event loop parses the page once (work it did
// per event before) and does no SQLite stepping of its own.
//
// Plain JavaScript on purpose, like sqlite-writer.js: a worker is started from a file, and this
// one must load as it is from src/ (tests, tsx) and from dist/ (the build emits it as an entry).
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

/** @typedef {{ id: number, categories: string[], after: number, limit: number, overwrites?: string[] }} PageRequest */

const port = parentPort;
if (!port) throw new Error("sqlite-reader.js runs as a worker thread of the SQLite event store");

const { file, busyTimeoutMs } = /** @type {{ file: string, busyTimeoutMs: number }} */ (workerData);
const db = new Database(file, { fileMustExist: true });
db.pragma(`busy_timeout = ${Number(busyTimeoutMs)}`);

/** @type {import("better-sqlite3").Statement<[], { head: number | null }>} */
const selectHead = db.prepare("SELECT max(position) AS head FROM events");

// One event as JSON, in the key order sqlite.ts's `toRecorded` gives them (both make objects of
// one shape); data and metadata are stored as JSON and go in as they are.
const EVENT_JSON = `'{"id":' || json_quote(e.id) || ',"streamName":' || json_quote(e.stream)
  || ',"type":' || json_quote(e.type) || ',"data":' || e.data || ',"metadata":' || e.metadata
  || ',"version":' || e.version || ',"revision":' || e.revision || ',"position":' || e.position
  || ',"createdAt":' || json_quote(e.created_at) || '}'`;

const marks = (/** @type {number} */ n) => Array(n).fill("?").join(", ");

/** @type {Map<string, import("better-sqlite3").Statement<unknown[], string>>} */
const pages = new Map();
/**
 * The page's events, each as JSON made by SQLite. With `overwrites` types, an event of one of
 * them is left out when the next revision of its stream, stored by the head read before the page,
 * is of one of them too (it writes over everything the first wrote: SubscribeOptions.overwrites).
 */
function pageStatement(/** @type {number} */ categories, /** @type {number} */ overwrites) {
  const key = `${categories}/${overwrites}`;
  let statement = pages.get(key);
  if (!statement) {
    const overwritten =
      overwrites === 0
        ? ""
        : `AND NOT (e.type IN (${marks(overwrites)}) AND EXISTS (SELECT 1 FROM events AS next
             WHERE next.stream = e.stream AND next.revision = e.revision + 1
             AND next.type IN (${marks(overwrites)}) AND next.position <= ?))`;
    statement = /** @type {import("better-sqlite3").Statement<unknown[], string>} */ (
      db
        .prepare(
          `SELECT ${EVENT_JSON} FROM events AS e WHERE e.category IN (${marks(categories)})
           AND e.position > ? ${overwritten} ORDER BY e.position LIMIT ?`,
        )
        .pluck()
    );
    pages.set(key, statement);
  }
  return statement;
}

/**
 * Events per JSON text handed over: a text stays below V8's large-object size, so the copy the
 * event loop receives is young garbage once parsed (a whole page's text went to the old
 * generation, and its full collections cost more than the parse).
 */
const CHUNK = 100;

/**
 * The head (read first: anything committed after it lies above it), then the page, as JSON
 * arrays of at most CHUNK events.
 * @param {PageRequest} request
 */
function read({ id, categories, after, limit, overwrites = [] }) {
  const head = selectHead.get()?.head ?? -1;
  const statement = pageStatement(categories.length, overwrites.length);
  const rows =
    overwrites.length === 0
      ? statement.all(...categories, after, limit)
      : statement.all(...categories, after, ...overwrites, ...overwrites, head, limit);
  const chunks = [];
  for (let from = 0; from < rows.length; from += CHUNK)
    chunks.push(`[${rows.slice(from, from + CHUNK).join(",")}]`);
  return { id, head, count: rows.length, chunks };
}

port.on("message", (/** @type {PageRequest | { close: true }} */ message) => {
  if ("close" in message) {
    db.close();
    port.close();
    return;
  }
  try {
    port.postMessage(read(message));
  } catch (error) {
    port.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) });
  }
});
