import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import {
  type AppendResult,
  categoryOf,
  type EventStore,
  type EventToAppend,
  type ExpectedRevision,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedRevisionError,
} from "./port.ts";

export interface SqliteEventStoreOptions {
  /** Path of the database file; several processes may open the same file. */
  file: string;
  /** How often subscriptions look for appends made by other processes. Default 50 ms. */
  pollIntervalMs?: number;
}

const PAGE_SIZE = 500;

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
const EVENT_COLUMNS = "position, stream, revision, id, type, data, metadata, created_at";
type EventRow = [
  position: number,
  stream: string,
  revision: number,
  id: string,
  type: string,
  data: string,
  metadata: string,
  createdAt: string,
];

interface StreamRow {
  revision: number;
  deleted: number;
}

export function createSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  const db = new Database(options.file);
  db.pragma("journal_mode = WAL");
  // FULL fsyncs the WAL on every commit: an acknowledged append survives a crash or power loss.
  db.pragma("synchronous = FULL");
  // Other processes (replicas) write to the same file; wait for their lock instead of failing. The
  // wait blocks this process's event loop (better-sqlite3 is synchronous), but commits are short.
  db.pragma("busy_timeout = 5000");
  db.exec(SCHEMA);

  const selectStream = db.prepare<[string], StreamRow>(
    "SELECT revision, deleted FROM streams WHERE name = ?",
  );
  const insertEvent = db.prepare(
    `INSERT INTO events (stream, category, revision, id, type, data, metadata, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const upsertStream = db.prepare(
    `INSERT INTO streams (name, revision, deleted) VALUES (?, ?, 0)
     ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, deleted = 0`,
  );
  const markDeleted = db.prepare("UPDATE streams SET deleted = 1 WHERE name = ?");
  const deleteEvents = db.prepare("DELETE FROM events WHERE stream = ?");
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

  /** The stream's revision as callers see it: a deleted stream does not exist. */
  function currentRevision(streamName: string): { actual: number | "no_stream"; last: number } {
    const row = selectStream.get(streamName);
    if (!row) return { actual: "no_stream", last: -1 };
    return { actual: row.deleted ? "no_stream" : row.revision, last: row.revision };
  }

  function check(streamName: string, expected: ExpectedRevision, actual: number | "no_stream"): void {
    const ok =
      expected === "any" ||
      (expected === "no_stream" && actual === "no_stream") ||
      (expected === "stream_exists" && actual !== "no_stream") ||
      expected === actual;
    if (!ok) throw new WrongExpectedRevisionError(streamName, expected, actual);
  }

  /** One append; run inside a transaction (the group commit's, below). */
  const appendEvents = (
    streamName: string,
    events: EventToAppend[],
    expected: ExpectedRevision,
  ): AppendResult => {
    const { actual, last } = currentRevision(streamName);
    check(streamName, expected, actual);
    if (events.length === 0) {
      return { nextRevision: actual === "no_stream" ? -1 : actual, position: selectHead.get()?.head ?? -1 };
    }
    const category = categoryOf(streamName);
    const createdAt = new Date().toISOString();
    let revision = last;
    let position = -1;
    for (const event of events) {
      revision += 1;
      const result = insertEvent.run(
        streamName,
        category,
        revision,
        event.id ?? randomUUID(),
        event.type,
        JSON.stringify(event.data ?? null),
        JSON.stringify(event.metadata ?? {}),
        createdAt,
      );
      position = Number(result.lastInsertRowid);
    }
    upsertStream.run(streamName, revision);
    return { nextRevision: revision, position };
  };

  /** One deletion; run inside a transaction, as an append. */
  const deleteEventsOf = (streamName: string, expected: ExpectedRevision): void => {
    const { actual } = currentRevision(streamName);
    check(streamName, expected, actual);
    deleteEvents.run(streamName);
    markDeleted.run(streamName);
  };

  // Group commit. Appends and deletes are queued and written at the end of the event loop's
  // turn (setImmediate): every write requested meanwhile goes into ONE IMMEDIATE transaction, so
  // one WAL fsync (synchronous = FULL) covers them all instead of one fsync each. Each write runs
  // in its own savepoint (better-sqlite3 nests a transaction function as one), in call order,
  // with its own expected-revision check and its own outcome: a write refused (wrong expected
  // revision) is rolled back alone and rejects alone; the others still commit. A caller hears
  // of its write only after the COMMIT returned, so an acknowledged write is as durable as
  // before. Should SQLite have ended the whole transaction under a failing statement (I/O
  // error, disk full), or the BEGIN or the COMMIT fail, every write of the batch rejects.
  type Write = {
    run: () => unknown;
    resolve: (value: never) => void;
    reject: (error: unknown) => void;
  };
  type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
  let queued: Write[] = [];
  // Called at the top level: BEGIN IMMEDIATE ... COMMIT; called inside a transaction: a savepoint.
  const transaction = db.transaction((run: () => unknown) => run());
  const commitBatch = db.transaction((batch: Write[]): Outcome[] =>
    batch.map((write) => {
      try {
        return { ok: true, value: transaction(write.run) };
      } catch (error) {
        if (!db.inTransaction) throw error; // the whole transaction is gone: nothing of it stands
        return { ok: false, error };
      }
    }),
  );

  function flush(): void {
    const batch = queued;
    queued = [];
    if (batch.length === 0) return;
    let outcomes: Outcome[];
    try {
      outcomes =
        batch.length === 1
          ? [{ ok: true, value: transaction.immediate(batch[0]!.run) }]
          : commitBatch.immediate(batch);
    } catch (error) {
      for (const write of batch) write.reject(error);
      return;
    }
    wakeAll();
    batch.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value as never);
      else write.reject(outcome.error);
    });
  }

  function enqueue<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (queued.length === 0) setImmediate(flush);
      queued.push({ run, resolve: resolve as (value: never) => void, reject });
    });
  }

  // Subscriptions wait on this: woken at once by appends of this process, and by a poll of
  // max(position) for appends made by other processes on the same file.
  const waiters = new Set<() => void>();
  const subscriptions = new Set<Subscription>();
  let openReads = 0;
  let lastSeenHead = selectHead.get()?.head ?? -1;
  let pollTimer: NodeJS.Timeout | undefined;

  function wakeAll(): void {
    for (const wake of [...waiters]) wake();
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

  function subscribe(subscribeOptions: SubscribeOptions): Subscription {
    const { categories, handler, onCaughtUp, onCheckpoint, onError } = subscribeOptions;
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
        waiters.add(wakeUp);
      });

    const run = async () => {
      await Promise.resolve(); // deliver nothing before subscribe() has returned
      let caughtUp = false;
      while (!closed) {
        // The head is read before the page: anything committed in between lies above it.
        const head = selectHead.get()?.head ?? -1;
        const page = selectPage ? selectPage.all(...categories, cursor, PAGE_SIZE) : [];
        for (const row of page) {
          if (closed) return;
          await handler(toRecorded(row));
          cursor = row[0];
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
        // Wait only after an empty read: the read and the registration happen in the same tick, so no
        // append can slip between them unnoticed (appends made while a handler ran are read next loop).
        if (page.length === 0 && !closed) await waitForAppend();
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
        subscriptions.delete(subscription);
        stopPollingIfIdle();
      });
    subscriptions.add(subscription);
    startPolling();
    return subscription;
  }

  return {
    append(streamName, events, { expectedRevision }) {
      // Committed with whatever else is written in this turn of the event loop (group commit,
      // above), under IMMEDIATE: the write lock is taken before the revision is read, so the
      // check and the insert are atomic across processes too.
      return enqueue(() => appendEvents(streamName, events, expectedRevision));
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
      await enqueue(() => deleteEventsOf(streamName, deleteOptions.expectedRevision ?? "any"));
    },

    async ping() {
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
      if (pollTimer) clearInterval(pollTimer);
      pollTimer = undefined;
      if (db.open) {
        flush(); // writes requested before close are committed, not dropped
        db.close();
      }
    },
  };
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
]: EventRow): RecordedEvent {
  return {
    id,
    streamName: stream,
    type,
    data: JSON.parse(data),
    // Most events carry no metadata: skip the parse for the empty object.
    metadata: metadata === "{}" ? {} : JSON.parse(metadata),
    revision,
    position,
    createdAt,
  };
}
