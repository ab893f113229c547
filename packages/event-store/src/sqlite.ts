import { randomUUID } from "node:crypto";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { isBusy } from "./busy-retry.js";
import {
  categoryOf,
  type EventStore,
  EventStoreUnavailableError,
  type EventToAppend,
  type ExpectedRevision,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedRevisionError,
} from "./port.ts";

export interface SqliteEventStoreOptions {
  /** Path of the database file; several processes may open the same file. */
  file: string;
  /** How often subscriptions look for appends made by other processes. Default 50 ms. */
  pollIntervalMs?: number;
  /**
   * How long a write or read waits for another connection's lock before it fails (a write with
   * `EventStoreUnavailableError`). Default 5 s.
   */
  busyTimeoutMs?: number;
}

const BUSY_TIMEOUT_MS = 5_000;

const PAGE_SIZE = 500;
/** How long the reader thread stays after the last page it was asked for. */
const READER_IDLE_MS = 1_000;

// `streams.revision` is the last revision ever written, kept when the stream is deleted: like
// EventStoreDB's soft delete, a recreated stream continues numbering after the deleted one's last
// revision (delete at revision 2, append with "no_stream" -> revision 3). The deleted events are
// removed, so neither readStream nor readAll nor subscriptions return them again; AUTOINCREMENT
// keeps global positions from ever being reused, so subscriber checkpoints stay valid. Writers are
// serialised by SQLite's write lock, so positions become visible in increasing order and a reader
// past position N never later finds a newly committed event below N.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position   INTEGER PRIMARY KEY AUTOINCREMENT,
  stream     TEXT    NOT NULL,
  category   TEXT    NOT NULL,
  revision   INTEGER NOT NULL,
  id         TEXT    NOT NULL,
  type       TEXT    NOT NULL,
  data       TEXT    NOT NULL,
  metadata   TEXT    NOT NULL,
  created_at TEXT    NOT NULL,
  version    INTEGER NOT NULL DEFAULT 1,
  UNIQUE (stream, revision)
);
CREATE INDEX IF NOT EXISTS events_by_category ON events (category, position);
CREATE TABLE IF NOT EXISTS streams (
  name     TEXT    PRIMARY KEY,
  revision INTEGER NOT NULL,
  deleted  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
`;

/**
 * An event as the reads select it: the columns as an array (better-sqlite3's raw mode, which
 * skips building an object with named keys per row: a third of a replay's reading time).
 */
const EVENT_COLUMNS = "position, stream, revision, id, type, data, metadata, created_at, version";
type EventRow = [
  position: number,
  stream: string,
  revision: number,
  id: string,
  type: string,
  data: string,
  metadata: string,
  createdAt: string,
  version: number,
];

/** What the writer thread (sqlite-writer.js) is sent: one write, its events serialised. */
type SerialisedEvent = [id: string, type: string, data: string, metadata: string, version: number];
interface Append {
  kind: "append";
  stream: string;
  category: string;
  expected: ExpectedRevision;
  createdAt: string;
  events: SerialisedEvent[];
}
type Write =
  | Append
  /** Several streams in one savepoint: all written or none. */
  | { kind: "appends"; appends: Append[] }
  | { kind: "delete"; stream: string; expected: ExpectedRevision };

/** What it answers per write: the write's result, or why it failed (an Error does not cross threads). */
type WriteOutcome = { ok: true; value: unknown } | { ok: false; error: WriteError };
interface WriteError {
  wrongRevision?: { stream: string; expected: ExpectedRevision; actual: number | "no_stream" };
  name: string;
  message: string;
  code?: string;
}

/**
 * The error a write failed with, as the caller's thread can throw it. A write that could not have
 * another connection's lock within its busy timeout (`SQLITE_BUSY`: replicas on one file, a commit
 * held up by a slow disk; the writer thread tries again where SQLite refuses sooner, busy-retry.js)
 * is the store not answering in time, as EventStoreDB's deadline is: 503 with Retry-After for the
 * caller, not an internal error.
 */
function toError(error: WriteError): Error {
  if (error.wrongRevision) {
    return new WrongExpectedRevisionError(
      error.wrongRevision.stream,
      error.wrongRevision.expected,
      error.wrongRevision.actual,
    );
  }
  const failure = Object.assign(
    new Error(error.message),
    { name: error.name },
    error.code ? { code: error.code } : {},
  );
  if (isBusy(error)) {
    return new EventStoreUnavailableError(
      "the event store stayed locked by another writer past its busy timeout",
      {
        cause: failure,
      },
    );
  }
  return failure;
}

export function createSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  const db = new Database(options.file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  // This connection reads; it writes only the schema, here, waiting for other processes' locks.
  // Appends and deletes go through the writer thread (below) and its own connection.
  const busyTimeoutMs = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  db.exec(SCHEMA);
  addVersionColumn(db);

  const selectStreamEvents = db
    .prepare<[string, number, number], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND revision >= ? ORDER BY revision LIMIT ?`,
    )
    .raw();
  const selectAllPage = db
    .prepare<[number, number, number], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ?`,
    )
    .raw();
  /** The same for some categories only, through the (category, position) index; one statement per count. */
  const categoriesPages = new Map<number, Database.Statement<unknown[], EventRow>>();
  const categoriesPage = (count: number) => {
    let statement = categoriesPages.get(count);
    if (!statement) {
      statement = db
        .prepare<unknown[], EventRow>(
          `SELECT ${EVENT_COLUMNS} FROM events WHERE category IN (${Array(count).fill("?").join(", ")})
           AND position > ? AND position <= ? ORDER BY position LIMIT ?`,
        )
        .raw();
      categoriesPages.set(count, statement);
    }
    return statement;
  };
  const selectHead = db.prepare<[], { head: number | null }>("SELECT max(position) AS head FROM events");

  // Group commit on a writer thread (sqlite-writer.js, its own connection): appends and deletes
  // are queued and sent to it together, every write asked for while the previous group was being
  // committed (or in this turn of the event loop) in ONE transaction, one WAL fsync
  // (synchronous = FULL), each write in its own savepoint with its own expected-revision check
  // and its own outcome. The fsync no longer stops this event loop: it keeps serving reads (on
  // `db`, which sees every committed write: WAL) while the writer commits. A caller hears of its
  // write only after the COMMIT returned, so an acknowledged write is durable. One group is in
  // flight at a time, so writes commit in the order they were asked for.
  /** A write waiting for its outcome, with the categories it writes (their followers are woken). */
  type Pending = {
    categories: readonly string[];
    resolve: (value: never) => void;
    reject: (error: unknown) => void;
  };
  let queued: { writes: Write[]; pending: Pending[] } = { writes: [], pending: [] };
  let inFlight: Pending[] | undefined;
  let sendScheduled = false;
  let closing = false;
  let writerFailure: Error | undefined;
  /** Called each time a group's outcomes are in (or the writer failed). */
  const settledWaiters = new Set<() => void>();

  // Started by the first write (a process that only reads spends no thread on it), then kept.
  let writer: Worker | undefined;
  function startWriter(): Worker {
    const thread = new Worker(new URL("./sqlite-writer.js", import.meta.url), {
      workerData: { file: options.file, busyTimeoutMs },
    });
    thread.on("message", ({ outcomes }: { outcomes: WriteOutcome[] }) => {
      const pending = inFlight ?? [];
      inFlight = undefined;
      thread.unref(); // referenced only while a group is in flight (send, below)
      wakeFollowers(new Set(pending.flatMap((write) => write.categories)));
      pending.forEach((write, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) write.resolve(outcome.value as never);
        else write.reject(toError(outcome.error));
      });
      if (queued.writes.length > 0) send();
      for (const settled of [...settledWaiters]) settled();
    });
    thread.on("error", failWriter);
    thread.on("exit", () => failWriter(new Error("the event store's writer thread has stopped")));
    return thread;
  }
  function failWriter(error: Error): void {
    writerFailure ??= error;
    for (const write of [...(inFlight ?? []), ...queued.pending]) write.reject(writerFailure);
    inFlight = undefined;
    queued = { writes: [], pending: [] };
    for (const settled of [...settledWaiters]) settled();
  }

  function send(): void {
    sendScheduled = false;
    if (inFlight || queued.writes.length === 0 || writerFailure) return;
    const { writes, pending } = queued;
    queued = { writes: [], pending: [] };
    inFlight = pending;
    writer ??= startWriter();
    writer.ref();
    writer.postMessage({ writes });
  }

  function enqueue<T>(write: Write): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (closing) return reject(new Error("the event store is closed"));
      if (writerFailure) return reject(writerFailure);
      queued.writes.push(write);
      const categories =
        write.kind === "appends"
          ? write.appends.map((append) => append.category)
          : [write.kind === "append" ? write.category : categoryOf(write.stream)];
      queued.pending.push({ categories, resolve: resolve as (value: never) => void, reject });
      if (!inFlight && !sendScheduled) {
        sendScheduled = true;
        setImmediate(send);
      }
    });
  }

  /** Every write asked for before close committed (or refused), then the writer thread stopped. */
  let writerClosed: Promise<void> | undefined;
  const closeWriter = () => {
    writerClosed ??= stopWriter();
    return writerClosed;
  };
  async function stopWriter(): Promise<void> {
    closing = true;
    while (!writerFailure && (inFlight || queued.writes.length > 0)) {
      const settled = new Promise<void>((resolve) => settledWaiters.add(resolve));
      send();
      await settled;
      settledWaiters.clear();
    }
    if (writerFailure || !writer) return;
    const thread = writer;
    const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
    thread.ref(); // the process waits for the writer to close its connection
    thread.postMessage({ close: true });
    await exited;
  }

  // Subscriptions wait on this: woken at once by appends of this process to their categories,
  // and by a poll of max(position) for appends made by other processes on the same file (which
  // wakes every one: the poll does not know the categories). `wakeUps` counts the wake-ups, so a
  // subscription can tell whether anything was appended since it last read.
  const waiters = new Map<() => void, readonly string[]>();
  let wakeUps = 0;
  type Page = { head: number; events: RecordedEvent[]; wakeUpsBefore: number };
  const sharedPages = new Map<string, { after: number; page: Page }>();
  /** Every subscription's categories (as a page key and a set) and where it stands. */
  type Follower = { key: string; categories: ReadonlySet<string>; cursor: () => number };
  const followers = new Set<Follower>();
  const subscriptions = new Set<Subscription>();
  let openReads = 0;
  let lastSeenHead = selectHead.get()?.head ?? -1;
  let pollTimer: NodeJS.Timeout | undefined;

  function wakeAll(): void {
    wakeUps += 1;
    sharedPages.clear();
    for (const wake of [...waiters.keys()]) wake();
  }

  /**
   * After a group of this process's writes: the subscriptions following a category written. The
   * others stay asleep (a group of delivery appends read nothing for a subscription to webhooks).
   */
  function wakeFollowers(written: ReadonlySet<string>): void {
    wakeUps += 1;
    sharedPages.clear();
    for (const [wake, categories] of [...waiters]) {
      if (categories.some((category) => written.has(category))) wake();
    }
  }

  function poll(): void {
    try {
      const head = selectHead.get()?.head ?? -1;
      if (head !== lastSeenHead) {
        lastSeenHead = head;
        wakeAll();
      }
    } catch {
      // The database was closed under us; close() stops the timer.
    }
  }

  function startPolling(): void {
    if (pollTimer) return;
    pollTimer = setInterval(poll, options.pollIntervalMs ?? 50);
    pollTimer.unref();
  }

  function stopPollingIfIdle(): void {
    if (subscriptions.size === 0 && pollTimer) {
      clearInterval(pollTimer);
      pollTimer = undefined;
    }
  }

  // Catch-ups read ahead on a reader thread (sqlite-reader.js, its own connection): while a
  // subscription applies a full page, the next one is read there and comes back as one JSON text
  // (one JSON.parse here, no SQLite work on this event loop). Started by the first full page
  // (a process that only follows new appends spends no thread on it), stopped once no read has
  // been asked of it for READER_IDLE_MS, so an idle process does not keep its memory.
  type PageReply =
    | { id: number; head: number; count: number; chunks: string[] }
    | { id: number; error: string };
  let reader: Worker | undefined;
  let readerRequests = 0;
  const readerPending = new Map<
    number,
    { resolve: (reply: PageReply) => void; reject: (error: Error) => void }
  >();
  let readerIdle: NodeJS.Timeout | undefined;
  function stopReader(): void {
    clearTimeout(readerIdle);
    readerIdle = undefined;
    const thread = reader;
    reader = undefined;
    if (!thread) return;
    const failed = new Error("the event store's reader thread has stopped");
    for (const pending of readerPending.values()) pending.reject(failed);
    readerPending.clear();
    thread.removeAllListeners();
    thread.on("error", () => {});
    thread.postMessage({ close: true });
  }
  function startReader(): Worker {
    const thread = new Worker(new URL("./sqlite-reader.js", import.meta.url), {
      workerData: { file: options.file, busyTimeoutMs },
    });
    thread.on("message", (reply: PageReply) => {
      const pending = readerPending.get(reply.id);
      readerPending.delete(reply.id);
      if (readerPending.size === 0) {
        thread.unref(); // referenced only while a read is asked of it (readAhead, below)
        clearTimeout(readerIdle);
        readerIdle = setTimeout(stopReader, READER_IDLE_MS).unref();
      }
      pending?.resolve(reply);
    });
    const fail = (error: Error) => {
      if (reader !== thread) return;
      reader = undefined;
      for (const pending of readerPending.values()) pending.reject(error);
      readerPending.clear();
    };
    thread.on("error", fail);
    thread.on("exit", () => fail(new Error("the event store's reader thread has stopped")));
    return thread;
  }
  /**
   * The page of `categories` after `after`, read on the reader thread; without the events that
   * the next of their stream writes over, when `overwrites` names types (SubscribeOptions).
   */
  function readAhead(categories: string[], after: number, overwrites: readonly string[]): Promise<Page> {
    const wakeUpsBefore = wakeUps;
    clearTimeout(readerIdle);
    reader ??= startReader();
    reader.ref();
    const id = ++readerRequests;
    const thread = reader;
    return new Promise<PageReply>((resolve, reject) => {
      readerPending.set(id, { resolve, reject });
      thread.postMessage({ id, categories, after, limit: PAGE_SIZE, overwrites });
    }).then((reply) => {
      if ("error" in reply) throw new Error(reply.error);
      const events: RecordedEvent[] = [];
      for (const chunk of reply.chunks)
        for (const event of JSON.parse(chunk) as RecordedEvent[]) events.push(event);
      return { head: reply.head, events, wakeUpsBefore };
    });
  }

  // Subscriptions woken together that follow the same categories from the same position (a
  // projection and the outbox relay of one service, after an append) read one page: the last short
  // page read per set of categories, kept until the next wake-up (which empties `sharedPages`).
  // Those that follow other categories from the same position (the webhook scheduler and the
  // deliveries projection) read one page of all their categories, each kept its own part of it
  // (`readTogether`).
  // It stays what a read would answer until then (an append announces itself with a wake-up: this
  // process's once committed, another's when the poll sees the head move), and its `wakeUpsBefore`
  // is the read's own, so a subscription handed it waits or reads again exactly as its reader
  // would. Its events are handed to each such subscription: handlers do not modify them
  // (SubscribeOptions.handler).
  function sharedPage(key: string, after: number): Page | undefined {
    const kept = sharedPages.get(key);
    return kept?.after === after ? kept.page : undefined;
  }
  function keepPage(key: string, after: number, page: Page): void {
    // A short page only: a full one is a catch-up's, read once per subscription.
    if (page.events.length < PAGE_SIZE) sharedPages.set(key, { after, page });
    else sharedPages.delete(key);
  }
  /**
   * For `reader`, the page after `after` read together with the other subscriptions standing at
   * the same position but following other categories: one read of all their categories, each
   * one's events kept for it. Undefined when none stands there, or when the page read is full (a
   * part of it would not hold every event up to the head): the reader then reads its own.
   */
  function readTogether(reader: Follower, after: number, head: number, wakeUpsBefore: number) {
    const together = [...followers].filter(
      (follower) =>
        follower.key !== reader.key && follower.categories.size > 0 && follower.cursor() === after,
    );
    if (together.length === 0) return undefined;
    const categories = new Set(reader.categories);
    for (const follower of together) for (const category of follower.categories) categories.add(category);
    const rows = categoriesPage(categories.size).all(
      ...categories,
      after,
      Number.MAX_SAFE_INTEGER,
      PAGE_SIZE,
    );
    if (rows.length === PAGE_SIZE) return undefined;
    const events = rows.map(toRecorded);
    for (const follower of together) {
      const own = events.filter((event) => follower.categories.has(categoryOf(event.streamName)));
      keepPage(follower.key, after, { head, events: own, wakeUpsBefore });
    }
    const own = events.filter((event) => reader.categories.has(categoryOf(event.streamName)));
    const page = { head, events: own, wakeUpsBefore };
    keepPage(reader.key, after, page);
    return page;
  }

  function subscribe(subscribeOptions: SubscribeOptions): Subscription {
    const { categories, handler, onCaughtUp, onCheckpoint, onError, overwrites = [] } = subscribeOptions;
    const placeholders = categories.map(() => "?").join(", ");
    const selectPage =
      categories.length === 0
        ? undefined
        : db
            .prepare<unknown[], EventRow>(
              `SELECT ${EVENT_COLUMNS} FROM events WHERE category IN (${placeholders}) AND position > ? ORDER BY position LIMIT ?`,
            )
            .raw();
    let cursor = subscribeOptions.after ?? -1;
    let checkpoint = cursor;
    let closed = false;
    let wake: (() => void) | undefined;

    const waitForAppend = () =>
      new Promise<void>((resolve) => {
        const wakeUp = () => {
          waiters.delete(wakeUp);
          wake = undefined;
          resolve();
        };
        wake = wakeUp;
        waiters.set(wakeUp, categories);
      });

    const pageKey = categories.join("\0");
    const follower: Follower = { key: pageKey, categories: new Set(categories), cursor: () => cursor };
    /** The page after `cursor`, read here, or the one read for the same since the last wake-up. */
    const readHere = (): Page => {
      const shared = sharedPage(pageKey, cursor);
      if (shared) return shared;
      const wakeUpsBefore = wakeUps;
      // The head is read before the page: anything committed in between lies above it.
      const head = selectHead.get()?.head ?? -1;
      const together = selectPage ? readTogether(follower, cursor, head, wakeUpsBefore) : undefined;
      if (together) return together;
      const rows = selectPage ? selectPage.all(...categories, cursor, PAGE_SIZE) : [];
      const page = { head, events: rows.map(toRecorded), wakeUpsBefore };
      keepPage(pageKey, cursor, page);
      return page;
    };

    let ahead: Promise<Page> | undefined;
    const run = async () => {
      await Promise.resolve(); // deliver nothing before subscribe() has returned
      let caughtUp = false;
      while (!closed) {
        const read = ahead ? await ahead : readHere();
        ahead = undefined;
        if (closed) return;
        const { head, events: page, wakeUpsBefore } = read;
        // A full page: more to catch up on, read on the reader thread while this one is applied;
        // until caught up, without what the next event of its stream writes over.
        if (page.length === PAGE_SIZE) {
          ahead = readAhead(categories, page[PAGE_SIZE - 1]!.position, caughtUp ? [] : overwrites);
          ahead.catch(() => {}); // seen where it is awaited; not when the subscription closed first
        }
        for (const event of page) {
          if (closed) return;
          await handler(event);
          cursor = event.position;
        }
        // A short page was read after subscribe() was called, so everything that existed then is delivered.
        if (!caughtUp && page.length < PAGE_SIZE && !closed) {
          caughtUp = true;
          onCaughtUp?.();
        }
        // A short page holds every event of the categories up to the head read before it.
        if (page.length < PAGE_SIZE && head > checkpoint && !closed) {
          checkpoint = head;
          onCheckpoint?.(head);
        }
        // Wait after an empty read (the read and the registration happen in the same tick, so no
        // append can slip between them unnoticed), or after a short page when nothing woke the
        // subscriptions since it was read: an append becomes visible before the wake-up that
        // announces it (this process's once its commit returned, another's when the poll sees
        // the head move), so anything the page missed comes with a wake-up still to come. Appends
        // announced while the handlers ran are read next loop.
        if ((page.length === 0 || (page.length < PAGE_SIZE && wakeUps === wakeUpsBefore)) && !closed)
          await waitForAppend();
        // A full page means more to catch up on: let timers and I/O run first, so a long catch-up
        // (handlers that only await microtasks) does not starve the rest of the process.
        else if (page.length === PAGE_SIZE) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    };

    const subscription: Subscription = {
      async close() {
        closed = true;
        wake?.();
        await done;
      },
    };
    const done = run()
      .catch((error: unknown) => {
        if (!closed) onError?.(error instanceof Error ? error : new Error(String(error)));
      })
      .finally(() => {
        closed = true;
        followers.delete(follower);
        subscriptions.delete(subscription);
        stopPollingIfIdle();
      });
    subscriptions.add(subscription);
    followers.add(follower);
    startPolling();
    return subscription;
  }

  return {
    append(streamName, events, { expectedRevision }) {
      let write: Append;
      try {
        write = toAppend({ streamName, events, expectedRevision }, new Date().toISOString());
      } catch (error) {
        return Promise.reject(error);
      }
      return enqueue(write);
    },

    appendStreams(appends) {
      let write: Write;
      try {
        const named = new Set(appends.map((append) => append.streamName));
        if (named.size !== appends.length) throw new Error("appendStreams names each stream once");
        const createdAt = new Date().toISOString();
        write = { kind: "appends", appends: appends.map((append) => toAppend(append, createdAt)) };
      } catch (error) {
        return Promise.reject(error);
      }
      return enqueue(write);
    },

    async readStream(streamName, readOptions = {}) {
      const rows = selectStreamEvents.all(
        streamName,
        readOptions.fromRevision ?? 0,
        readOptions.maxCount ?? Number.MAX_SAFE_INTEGER,
      );
      return rows.map(toRecorded);
    },

    async *readAll(readOptions = {}) {
      let cursor = readOptions.after ?? -1;
      const until = readOptions.until ?? Number.MAX_SAFE_INTEGER;
      let remaining = readOptions.maxCount ?? Number.POSITIVE_INFINITY;
      const { categories } = readOptions;
      if (categories?.length === 0) return;
      const selectCategories = categories ? categoriesPage(categories.length) : undefined;
      // Each page is read whole, so nothing stays open between pages; the count is of reads under way.
      openReads += 1;
      try {
        while (remaining > 0) {
          const limit = Math.min(PAGE_SIZE, remaining);
          const page = selectCategories
            ? selectCategories.all(...(categories ?? []), cursor, until, limit)
            : selectAllPage.all(cursor, until, limit);
          for (const row of page) yield toRecorded(row);
          if (page.length < limit) return;
          remaining -= page.length;
          cursor = page[page.length - 1]![0];
        }
      } finally {
        openReads -= 1;
      }
    },

    async headPosition() {
      return selectHead.get()?.head ?? -1;
    },

    subscribe,

    async deleteStream(streamName, deleteOptions = {}) {
      await enqueue({
        kind: "delete",
        stream: streamName,
        expected: deleteOptions.expectedRevision ?? "any",
      });
    },

    async ping() {
      if (writerFailure) return false; // reads would answer, writes would not
      try {
        db.prepare("SELECT 1").get();
        return true;
      } catch {
        return false;
      }
    },

    openReads: () => openReads,

    async close() {
      await Promise.all([...subscriptions].map((subscription) => subscription.close()));
      stopReader();
      if (pollTimer) clearInterval(pollTimer);
      pollTimer = undefined;
      await closeWriter(); // writes requested before close are committed, not dropped
      if (db.open) db.close();
    },
  };
}

/**
 * One stream's append as the writer thread takes it. Serialised here, on the caller's side: a
 * value JSON cannot hold fails this append alone (it throws), before anything is queued.
 */
function toAppend({ streamName, events, expectedRevision }: StreamAppend, createdAt: string): Append {
  return {
    kind: "append",
    stream: streamName,
    category: categoryOf(streamName),
    expected: expectedRevision,
    createdAt,
    events: events.map(
      (event: EventToAppend): SerialisedEvent => [
        event.id ?? randomUUID(),
        event.type,
        JSON.stringify(event.data ?? null),
        JSON.stringify(event.metadata ?? {}),
        event.version ?? 1,
      ],
    ),
  };
}

/**
 * A file made before events carried their schema version gets the column, its events version 1.
 * Processes opening the file at once may both try: the one that finds the column added goes on.
 */
function addVersionColumn(db: Database.Database): void {
  const hasVersion = () =>
    (db.pragma("table_info(events)") as Array<{ name: string }>).some((column) => column.name === "version");
  if (hasVersion()) return;
  try {
    db.exec("ALTER TABLE events ADD COLUMN version INTEGER NOT NULL DEFAULT 1");
  } catch (error) {
    if (!hasVersion()) throw error;
  }
}

function toRecorded([
  position,
  stream,
  revision,
  id,
  type,
  data,
  metadata,
  createdAt,
  version,
]: EventRow): RecordedEvent {
  return {
    id,
    streamName: stream,
    type,
    data: JSON.parse(data),
    // Most events carry no metadata: skip the parse for the empty object.
    metadata: metadata === "{}" ? {} : JSON.parse(metadata),
    version,
    revision,
    position,
    createdAt,
  };
}
