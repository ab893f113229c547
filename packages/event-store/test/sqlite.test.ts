import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "@cheese/testing";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import {
  type EventStore,
  EventStoreUnavailableError,
  type RecordedEvent,
  WrongExpectedRevisionError,
} from "../src/port.ts";
import { createSqliteEventStore } from "../src/sqlite.ts";
import { eventStoreContract, waitFor } from "./contract.ts";

const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));

eventStoreContract("SQLite adapter contract", async () => {
  const dir = tempDir("event-store");
  const store = createSqliteEventStore({ file: join(dir.path, "events.db"), pollIntervalMs: 20 });
  return {
    store,
    async cleanup() {
      await store.close();
      dir.remove();
    },
    endSubscriptions: "SQLite subscriptions read the file themselves; no server can end them",
    atomicAppends: true,
  };
});

describe("SQLite adapter in one process", () => {
  it("delivers its own appends at once, without waiting for the poll, even those made while a handler runs", async () => {
    const dir = tempDir("event-store");
    // A poll this slow would fail the test: only the in-process notification can deliver in time.
    const store = createSqliteEventStore({ file: join(dir.path, "events.db"), pollIntervalMs: 60_000 });
    try {
      const received: number[] = [];
      let live = false;
      store.subscribe({
        categories: ["cheese"],
        handler: async (event) => {
          received.push(event.revision);
          if (event.revision === 0) {
            await store.append("cheese-1", [{ type: "CheeseRenamed", data: {} }], { expectedRevision: 0 });
          }
        },
        onCaughtUp: () => {
          live = true;
        },
      });
      await waitFor(() => live, 2_000);
      await store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" });
      await waitFor(() => received.length === 2, 2_000);
      expect(received).toEqual([0, 1]);
    } finally {
      await store.close();
      dir.remove();
    }
  });
  it("delivers what another writer appended while a handler ran, once the poll sees it", async () => {
    const dir = tempDir("event-store");
    const file = join(dir.path, "events.db");
    const store = createSqliteEventStore({ file, pollIntervalMs: 20 });
    const other = createSqliteEventStore({ file }); // another process's connection, as far as `store` knows
    try {
      const received: number[] = [];
      store.subscribe({
        categories: ["cheese"],
        handler: async (event) => {
          received.push(event.revision);
          if (event.revision === 0) {
            await other.append("cheese-1", [{ type: "CheeseRenamed", data: {} }], { expectedRevision: 0 });
            // The poll sees the head move while this handler still runs.
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        },
      });
      await other.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" });
      await waitFor(() => received.length === 2, 2_000);
      expect(received).toEqual([0, 1]);
    } finally {
      await store.close();
      await other.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter, subscriptions woken together", () => {
  it("hands subscriptions following the same categories from the same position one read of new events", async () => {
    const dir = tempDir("event-store");
    const store = createSqliteEventStore({ file: join(dir.path, "events.db"), pollIntervalMs: 60_000 });
    try {
      const projection: RecordedEvent[] = [];
      const relay: RecordedEvent[] = [];
      const behind: RecordedEvent[] = [];
      let live = 0;
      for (const received of [projection, relay]) {
        store.subscribe({
          categories: ["cheese"],
          handler: async (event) => void received.push(event),
          onCaughtUp: () => {
            live += 1;
          },
        });
      }
      await waitFor(() => live === 2, 2_000);
      const first = await store.append("cheese-1", [{ type: "CheeseAdded", data: { name: "Brie" } }], {
        expectedRevision: "no_stream",
      });
      await waitFor(() => projection.length === 1 && relay.length === 1, 2_000);
      // One started later, from before the first event, reads its own page and misses nothing.
      store.subscribe({ categories: ["cheese"], handler: async (event) => void behind.push(event) });
      await store.append("cheese-1", [{ type: "CheeseRenamed", data: { name: "Comté" } }], {
        expectedRevision: 0,
      });
      await waitFor(() => projection.length === 2 && relay.length === 2 && behind.length === 2, 2_000);
      for (const received of [projection, relay, behind]) {
        expect(received.map(({ type, data, position }) => ({ type, data, position }))).toEqual([
          { type: "CheeseAdded", data: { name: "Brie" }, position: first.position },
          { type: "CheeseRenamed", data: { name: "Comté" }, position: first.position + 1 },
        ]);
      }
      // The same objects: the new rows were read and parsed once for both.
      expect(relay[0]).toBe(projection[0]);
      expect(relay[1]).toBe(projection[1]);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter, subscriptions of other categories woken together", () => {
  it("hands subscriptions standing at the same position one read of all their categories, each its own events", async () => {
    const dir = tempDir("event-store");
    const store = createSqliteEventStore({ file: join(dir.path, "events.db"), pollIntervalMs: 60_000 });
    try {
      const scheduler: RecordedEvent[] = [];
      const projection: RecordedEvent[] = [];
      let live = 0;
      for (const [categories, received] of [
        [["delivery", "webhook"], scheduler],
        [["delivery"], projection],
      ] as const) {
        store.subscribe({
          categories: [...categories],
          handler: async (event) => void received.push(event),
          onCaughtUp: () => {
            live += 1;
          },
        });
      }
      await waitFor(() => live === 2, 2_000);
      const append = (stream: string) =>
        store.append(stream, [{ type: "Happened", data: { stream } }], { expectedRevision: "any" });
      await append("delivery-1");
      await waitFor(() => scheduler.length === 1 && projection.length === 1, 2_000);
      // Only the scheduler follows it: the projection, not woken, stays where it stood.
      await append("webhook-1");
      await waitFor(() => scheduler.length === 2, 2_000);
      await append("delivery-2"); // the two stand apart now: each reads its own
      await waitFor(() => scheduler.length === 3 && projection.length === 2, 2_000);
      await append("delivery-3"); // together again
      await waitFor(() => scheduler.length === 4 && projection.length === 3, 2_000);
      const streams = (received: RecordedEvent[]) => received.map((event) => event.streamName);
      expect(streams(scheduler)).toEqual(["delivery-1", "webhook-1", "delivery-2", "delivery-3"]);
      expect(streams(projection)).toEqual(["delivery-1", "delivery-2", "delivery-3"]);
      // The same objects where they stood together: read and parsed once for both.
      expect(scheduler[0]).toBe(projection[0]);
      expect(scheduler[3]).toBe(projection[2]);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter, schema versions", () => {
  it("opens a file made before events had versions: its events read as version 1, new ones keep theirs", async () => {
    const dir = tempDir("event-store");
    const file = join(dir.path, "events.db");
    // The tables as they were before the version column.
    const old = new Database(file);
    old.exec(`
      CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL,
        category TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL,
        data TEXT NOT NULL, metadata TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE (stream, revision));
      CREATE TABLE streams (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
      INSERT INTO events (stream, category, revision, id, type, data, metadata, created_at)
        VALUES ('cheese-1', 'cheese', 0, 'e-1', 'CheeseAdded', '{"name":"Brie"}', '{}', '2026-01-01T00:00:00.000Z');
      INSERT INTO streams (name, revision) VALUES ('cheese-1', 0);
    `);
    old.close();
    // Two stores opening it at once both find the column there afterwards.
    const store = createSqliteEventStore({ file });
    const other = createSqliteEventStore({ file });
    try {
      await store.append("cheese-1", [{ type: "CheeseRenamed", data: { name: "Comté" }, version: 2 }], {
        expectedRevision: 0,
      });
      const read = await other.readStream("cheese-1");
      expect(read.map(({ type, version, data }) => ({ type, version, data }))).toEqual([
        { type: "CheeseAdded", version: 1, data: { name: "Brie" } },
        { type: "CheeseRenamed", version: 2, data: { name: "Comté" } },
      ]);
    } finally {
      await store.close();
      await other.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter group commit (writes of one tick in one transaction)", () => {
  const withStore = async (
    test: (store: EventStore, file: string) => Promise<void>,
    options: { busyTimeoutMs?: number } = {},
  ) => {
    const dir = tempDir("event-store");
    const file = join(dir.path, "events.db");
    const store = createSqliteEventStore({ file, ...options });
    try {
      await test(store, file);
    } finally {
      await store.close();
      dir.remove();
    }
  };

  it("commits the writes of one tick in the order they were asked for, deletes included", async () => {
    await withStore(async (store) => {
      await store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" });
      const [a, , recreated, b] = await Promise.all([
        store.append("cheese-2", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
        store.deleteStream("cheese-1", { expectedRevision: 0 }),
        store.append("cheese-1", [{ type: "CheeseAdded", data: { again: true } }], {
          expectedRevision: "no_stream",
        }),
        store.append("cheese-3", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
      ]);
      expect(a.position).toBeLessThan(recreated.position);
      expect(recreated.position).toBeLessThan(b.position);
      expect(await store.readStream("cheese-1")).toMatchObject([{ data: { again: true }, revision: 1 }]);
    });
  });

  it("a write failing on its own is rolled back alone; the others of its tick stand", async () => {
    await withStore(async (store) => {
      const outcomes = await Promise.allSettled([
        store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
        // Two events, the second not serialisable: neither may be written.
        store.append(
          "cheese-2",
          [
            { type: "CheeseAdded", data: {} },
            { type: "CheeseRenamed", data: { big: 1n } },
          ],
          { expectedRevision: "no_stream" },
        ),
        store.append("cheese-3", [{ type: "CheeseAdded", data: {} }], { expectedRevision: 0 }),
        store.append("cheese-4", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual([
        "fulfilled",
        "rejected",
        "rejected",
        "fulfilled",
      ]);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
      expect((outcomes[2] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.readStream("cheese-1")).toHaveLength(1);
      expect(await store.readStream("cheese-2")).toEqual([]);
      expect(await store.readStream("cheese-3")).toEqual([]);
      expect(await store.readStream("cheese-4")).toHaveLength(1);
      // Revisions and positions go on without a hole left by the failed writes.
      expect(
        (
          await store.append("cheese-2", [{ type: "CheeseAdded", data: {} }], {
            expectedRevision: "no_stream",
          })
        ).nextRevision,
      ).toBe(0);
    });
  });

  it("when the transaction cannot be had, every write of the tick is refused as the store unavailable (503) and nothing is written", async () => {
    await withStore(
      async (store, file) => {
        // Another connection holds the write lock past the store's busy timeout.
        const other = new Database(file);
        other.exec("BEGIN IMMEDIATE");
        const outcomes = await Promise.allSettled([
          store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
          store.append("cheese-2", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
        ]);
        other.exec("ROLLBACK");
        other.close();
        expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "rejected"]);
        for (const outcome of outcomes) {
          const reason = (outcome as PromiseRejectedResult).reason;
          // The service answers it 503 with Retry-After, as an event store that does not answer.
          expect(reason).toBeInstanceOf(EventStoreUnavailableError);
          expect(reason).toMatchObject({ dependency: "event store", cause: { code: "SQLITE_BUSY" } });
        }
        expect(await store.readStream("cheese-1")).toEqual([]);
        expect(await store.readStream("cheese-2")).toEqual([]);
        await store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], {
          expectedRevision: "no_stream",
        });
        expect(await store.readStream("cheese-1")).toHaveLength(1);
        // A busy timeout of its own (5 s by default), so that running past it takes little time.
      },
      { busyTimeoutMs: 200 },
    );
  });
});

describe("SQLite adapter writer thread (commits off the event loop)", () => {
  it("keeps serving reads and timers while a commit waits for the write lock, and acknowledges after it", async () => {
    const dir = tempDir("event-store");
    const file = join(dir.path, "events.db");
    const store = createSqliteEventStore({ file });
    try {
      await store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" });
      // Another connection holds the write lock (as a replica's commit or a slow fsync would).
      const other = new Database(file);
      other.exec("BEGIN IMMEDIATE");
      let settled = false;
      const append = store
        .append("cheese-2", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" })
        .finally(() => {
          settled = true;
        });
      // A hundred turns of the event loop, each with a read, while the write waits.
      for (let turn = 0; turn < 100; turn++) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        expect(await store.readStream("cheese-1")).toHaveLength(1);
      }
      expect(settled).toBe(false);
      expect(await store.readStream("cheese-2")).toEqual([]);
      other.exec("ROLLBACK");
      other.close();
      const { position } = await append;
      expect(await store.readStream("cheese-2")).toMatchObject([{ revision: 0, position }]);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it("writes asked for while a group is being committed go into the next group, in the order asked for", async () => {
    const dir = tempDir("event-store");
    const store = createSqliteEventStore({ file: join(dir.path, "events.db") });
    try {
      // Each append is asked for in its own turn of the event loop, without waiting for the one
      // before to be acknowledged: each expects the revision the one before it will have written.
      const appends: Promise<unknown>[] = [];
      for (let revision = 0; revision < 50; revision++) {
        appends.push(
          store.append("cheese-1", [{ type: "Ticked", data: { revision } }], {
            expectedRevision: revision === 0 ? "no_stream" : revision - 1,
          }),
        );
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      await Promise.all(appends);
      const events = await store.readStream("cheese-1");
      expect(events.map((event) => (event.data as { revision: number }).revision)).toEqual(
        events.map((event) => event.revision),
      );
      expect(events).toHaveLength(50);
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it("commits the writes asked for before close, then refuses new ones", async () => {
    const dir = tempDir("event-store");
    const file = join(dir.path, "events.db");
    const store = createSqliteEventStore({ file });
    const appends = Array.from({ length: 10 }, (_, i) =>
      store.append(`cheese-${i}`, [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
    );
    await store.close();
    try {
      expect((await Promise.allSettled(appends)).map((outcome) => outcome.status)).toEqual(
        Array(10).fill("fulfilled"),
      );
      await expect(
        store.append("cheese-x", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" }),
      ).rejects.toThrow(/closed/);
      const reopened = createSqliteEventStore({ file });
      expect(await reopened.headPosition()).toBeGreaterThanOrEqual(9);
      await reopened.close();
    } finally {
      dir.remove();
    }
  });
});

describe("SQLite adapter catching up on a long history", () => {
  it("lets timers and I/O run between pages, so the rest of the process is not starved", async () => {
    const dir = tempDir("event-store");
    const store = createSqliteEventStore({ file: join(dir.path, "events.db") });
    try {
      for (let i = 0; i < 3000; i++) {
        await store.append(`delivery-${i}`, [{ type: "Happened", data: { i } }], {
          expectedRevision: "no_stream",
        });
      }
      let handled = 0;
      let handledWhenTimerRan: number | undefined;
      let caughtUp = false;
      setImmediate(() => {
        handledWhenTimerRan = handled;
      });
      store.subscribe({
        categories: ["delivery"],
        handler: async () => {
          handled++;
        },
        onCaughtUp: () => {
          caughtUp = true;
        },
      });
      await waitFor(() => caughtUp, 10_000);
      expect(handled).toBe(3000);
      expect(handledWhenTimerRan).toBeDefined();
      expect(handledWhenTimerRan!).toBeLessThan(3000);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter catching up on a long history, read ahead on the reader thread", () => {
  it("delivers every event as it is stored, in order, as a page read on the event loop gives it", async () => {
    const dir = tempDir("event-store");
    const store = createSqliteEventStore({ file: join(dir.path, "events.db") });
    try {
      // Pages read ahead carry the events from the fourth page on: data of every JSON kind, text
      // JSON must escape, metadata, versions; another category between them.
      const appends: Promise<unknown>[] = [];
      for (let i = 0; i < 1_700; i++) {
        appends.push(
          store.append(
            `cheese-${i % 40}`,
            [
              {
                type: i % 2 === 0 ? "CheeseAdded" : "CheeseRenamed",
                data:
                  i % 9 === 0
                    ? null
                    : { i, name: `Brie "${i}" \\ Île-de-France \u2028 🧀`, tags: [i, true, null] },
                metadata: i % 4 === 0 ? { correlationId: `c-${i}` } : {},
                version: 1 + (i % 3),
              },
            ],
            { expectedRevision: "any" },
          ),
        );
        if (i % 100 === 0)
          appends.push(
            store.append(`order-${i}`, [{ type: "OrderPlaced", data: { i } }], { expectedRevision: "any" }),
          );
      }
      await Promise.all(appends); // one tick's appends: one commit
      const stored: RecordedEvent[] = [];
      for await (const event of store.readAll({ categories: ["cheese"] })) stored.push(event);
      expect(stored).toHaveLength(1_700);
      const delivered: RecordedEvent[] = [];
      let caughtUpWith = -1;
      store.subscribe({
        categories: ["cheese"],
        handler: async (event) => {
          delivered.push(event);
        },
        onCaughtUp: () => {
          caughtUpWith = delivered.length;
        },
      });
      await waitFor(() => caughtUpWith !== -1, 10_000);
      expect(caughtUpWith).toBe(1_700);
      expect(delivered).toEqual(stored);
      expect(delivered.map((event) => Object.keys(event))).toEqual(stored.map((event) => Object.keys(event)));
    } finally {
      await store.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter catching up, leaving out what the next event of a stream writes over", () => {
  it("leaves out, until caught up, only an overwriting event followed in its stream by another; nothing after", async () => {
    const dir = tempDir("event-store");
    const store = createSqliteEventStore({ file: join(dir.path, "events.db") });
    try {
      // 60 streams, appended to in turn: each starts with Added, then overwriting Updated and
      // StatusChanged, an ImageAttached now and then (not overwriting), a Deleted at the end of some.
      const kinds = (n: number, revision: number) =>
        revision === 0
          ? "Added"
          : revision % 7 === 3
            ? "ImageAttached"
            : revision === 24 && n % 5 === 0
              ? "Deleted"
              : revision % 2 === 0
                ? "Updated"
                : "StatusChanged";
      const appends: Promise<unknown>[] = [];
      for (let revision = 0; revision < 25; revision++)
        for (let n = 0; n < 60; n++)
          appends.push(
            store.append(`cheese-${n}`, [{ type: kinds(n, revision), data: { n, revision } }], {
              expectedRevision: "any",
            }),
          );
      await Promise.all(appends);
      const stored: RecordedEvent[] = [];
      for await (const event of store.readAll({ categories: ["cheese"] })) stored.push(event);
      const overwrites = ["Updated", "StatusChanged"];
      const overwritten = (event: RecordedEvent) =>
        overwrites.includes(event.type) &&
        stored.some(
          (next) =>
            next.streamName === event.streamName &&
            next.revision === event.revision + 1 &&
            overwrites.includes(next.type),
        );

      const delivered: RecordedEvent[] = [];
      let caughtUp = false;
      store.subscribe({
        categories: ["cheese"],
        overwrites,
        handler: async (event) => {
          delivered.push(event);
        },
        onCaughtUp: () => {
          caughtUp = true;
        },
      });
      await waitFor(() => caughtUp, 10_000);
      // In order, as stored; what is missing is only what the next event of its stream writes over.
      const deliveredIds = new Set(delivered.map((event) => event.id));
      expect(delivered).toEqual(stored.filter((event) => deliveredIds.has(event.id)));
      const left = stored.filter((event) => !deliveredIds.has(event.id));
      expect(left.length).toBeGreaterThan(500);
      expect(left.filter((event) => !overwritten(event))).toEqual([]);
      // The last event of every stream is delivered.
      for (let n = 0; n < 60; n++)
        expect(delivered.findLast((event) => event.streamName === `cheese-${n}`)).toEqual(
          stored.findLast((event) => event.streamName === `cheese-${n}`),
        );

      // Caught up: a burst of overwriting events, pages of it read ahead too, arrives whole.
      const burst: Promise<unknown>[] = [];
      for (let i = 0; i < 1_200; i++)
        burst.push(store.append("cheese-0", [{ type: "Updated", data: { i } }], { expectedRevision: "any" }));
      await Promise.all(burst);
      await waitFor(() => delivered.length === deliveredIds.size + 1_200, 10_000);
      expect(delivered.slice(-1_200).map((event) => (event.data as { i: number }).i)).toEqual(
        Array.from({ length: 1_200 }, (_, i) => i),
      );
    } finally {
      await store.close();
      dir.remove();
    }
  });
});

describe("SQLite adapter across processes", () => {
  const dirs: Array<{ remove(): void }> = [];
  const children: ChildProcess[] = [];
  const newFile = () => {
    const dir = tempDir("event-store");
    dirs.push(dir);
    return join(dir.path, "events.db");
  };
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
    for (const dir of dirs.splice(0)) dir.remove();
  });

  /** Runs a fixture under tsx in its own Node process, as a replica of a service would run. */
  const runFixture = (name: string, args: string[]) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(fixtures, name), ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // "close", not "exit": at "exit" the pipe may still hold lines the child wrote before it
    // ended, and they count. (A writer that is SIGKILLed writes its acknowledgements to a file:
    // lines still on their way to stdout die with it.)
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once("close", (code, signal) => resolve({ code, signal })),
    );
    return { child, exited, stdout: () => stdout, stderr: () => stderr };
  };

  /**
   * Each stream holds every revision acknowledged (the last one given), gap-free and in order;
   * the killed process may have committed one more append per stream it never got to print.
   */
  const expectAcknowledgedKept = async (file: string, lastAcknowledged: Map<string, number>) => {
    const store = createSqliteEventStore({ file });
    try {
      for (const [stream, last] of lastAcknowledged) {
        const events = await store.readStream(stream);
        expect(events.length).toBeGreaterThanOrEqual(last + 1);
        expect(events.length).toBeLessThanOrEqual(last + 2);
        expect(events.map((event) => (event.data as { revision: number }).revision)).toEqual(
          events.map((event) => event.revision),
        );
      }
    } finally {
      await store.close();
    }
  };

  it("a subscription sees appends made by another process on the same file", async () => {
    const file = newFile();
    const store = createSqliteEventStore({ file, pollIntervalMs: 20 });
    try {
      const received: RecordedEvent[] = [];
      let caughtUp = false;
      store.subscribe({
        categories: ["counter"],
        handler: async (event) => {
          received.push(event);
        },
        onCaughtUp: () => {
          caughtUp = true;
        },
      });
      await waitFor(() => caughtUp);

      const other = runFixture("increment.ts", [file, "counter-1", "20"]);
      expect(await other.exited, other.stderr()).toEqual({ code: 0, signal: null });
      await waitFor(() => received.length === 20);
      expect(received.map((event) => event.revision)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(new Set(received.map((event) => (event.data as { pid: number }).pid))).toEqual(
        new Set([other.child.pid]),
      );
    } finally {
      await store.close();
    }
  });

  it("expected revisions hold when two processes append to the same stream concurrently", async () => {
    const file = newFile();
    // Create the schema first so both children start on an initialised file.
    await createSqliteEventStore({ file }).close();
    const startAt = String(Date.now() + 1_500);
    const racers = [1, 2].map(() => runFixture("increment.ts", [file, "counter-1", "150", startAt]));
    for (const racer of racers) expect(await racer.exited, racer.stderr()).toEqual({ code: 0, signal: null });
    const conflicts = racers.reduce((sum, racer) => sum + Number(racer.stdout().trim()), 0);

    const store = createSqliteEventStore({ file });
    try {
      const events = await store.readStream("counter-1");
      // Every acknowledged append is there exactly once, with gap-free revisions: no lost update.
      expect(events.map((event) => event.revision)).toEqual(Array.from({ length: 300 }, (_, i) => i));
      const perProcess = new Map<number, number>();
      for (const event of events) {
        const pid = (event.data as { pid: number }).pid;
        perProcess.set(pid, (perProcess.get(pid) ?? 0) + 1);
      }
      expect([...perProcess.values()]).toEqual([150, 150]);
      console.info(`two processes appended 300 events with ${conflicts} expected-revision conflicts`);
    } finally {
      await store.close();
    }
  });

  /** What a killed writer acknowledged: the lines of its acknowledgements file. */
  const acknowledgements = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n") : []);

  it("every acknowledged append survives SIGKILL of the writing process", async () => {
    const file = newFile();
    const acks = `${file}.acks`;
    const writer = runFixture("append-forever.ts", [file, acks]);
    await waitFor(() => acknowledgements(acks).length > 300, 30_000);
    writer.child.kill("SIGKILL");
    expect((await writer.exited).signal).toBe("SIGKILL");

    const acknowledged = acknowledgements(acks)
      .filter((line) => line !== "")
      .map(Number);
    const lastAcknowledged = acknowledged[acknowledged.length - 1]!;
    expect(acknowledged).toEqual(Array.from({ length: lastAcknowledged + 1 }, (_, i) => i));

    await expectAcknowledgedKept(file, new Map([["crash-1", lastAcknowledged]]));
  });

  it("every acknowledged append survives SIGKILL while many appends share each commit", async () => {
    const file = newFile();
    const acks = `${file}.acks`;
    const writers = 16;
    const writer = runFixture("append-concurrently.ts", [file, acks, String(writers)]);
    await waitFor(() => acknowledgements(acks).length > 1_000, 30_000);
    writer.child.kill("SIGKILL");
    expect((await writer.exited).signal).toBe("SIGKILL");

    const acknowledged = new Map<string, number>();
    for (const line of acknowledgements(acks)) {
      if (!line.includes(" ")) continue; // the empty string after the last newline
      const [writerNumber, revision] = line.split(" ").map(Number) as [number, number];
      const stream = `crash-${writerNumber}`;
      acknowledged.set(stream, Math.max(acknowledged.get(stream) ?? -1, revision));
    }
    expect(acknowledged.size).toBe(writers);
    await expectAcknowledgedKept(file, acknowledged);
  });

  it("keeps events across close and reopen, and continues positions", async () => {
    const file = newFile();
    const first = createSqliteEventStore({ file });
    const { position } = await first.append("cheese-1", [{ type: "CheeseAdded", data: { id: 1 } }], {
      expectedRevision: "no_stream",
    });
    await first.close();

    const second = createSqliteEventStore({ file });
    try {
      expect(await second.readStream("cheese-1")).toMatchObject([
        { type: "CheeseAdded", data: { id: 1 }, position },
      ]);
      const next = await second.append("cheese-1", [{ type: "CheeseRenamed", data: {} }], {
        expectedRevision: 0,
      });
      expect(next.position).toBeGreaterThan(position);
    } finally {
      await second.close();
    }
  });

  it("close stops subscriptions and ping answers false afterwards", async () => {
    const store = createSqliteEventStore({ file: newFile() });
    let delivered = 0;
    const errors: Error[] = [];
    store.subscribe({
      categories: ["cheese"],
      handler: async () => {
        delivered += 1;
      },
      onError: (error) => errors.push(error),
    });
    await store.append("cheese-1", [{ type: "CheeseAdded", data: {} }], { expectedRevision: "no_stream" });
    await waitFor(() => delivered === 1);
    // close() awaits the subscription's loop, so a subscription that kept running would hang here.
    await store.close();
    expect(await store.ping()).toBe(false);
    // close() awaited the subscription, so whatever it would report has been reported.
    expect(errors).toEqual([]);
  });
});
