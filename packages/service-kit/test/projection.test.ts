import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { type CollectionDefinition, createMemoryReadModels, type ReadModelStore } from "@cheese/read-models";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEventStoreDbStore } from "../../event-store/src/eventstoredb.ts";
// The EventStoreDB protocol stand-in of the event-store package's tests (no EventStoreDB runs here).
import { startEventStoreDbStandIn } from "../../event-store/test/stand-in/eventstoredb.ts";
import { FOLLOW_RESTART_MAX_MS, FOLLOW_RESTART_MS } from "../src/follow.ts";
import { createLogger } from "../src/logger.ts";
import { type ProjectionOptions, startProjection } from "../src/projection.ts";
import { ManualClock } from "../src/testing.ts";

const things: CollectionDefinition = {
  name: "things",
  indexes: [],
  queries: [{ name: "every thing (the tests look)", filter: {}, scans: "a handful of test documents" }],
};

const base = (store: EventStore, readModels: ReadModelStore = createMemoryReadModels()) => ({
  name: "things",
  version: 1,
  collections: [things],
  eventStore: store,
  readModels,
  categories: ["thing"],
  logger: createLogger("test", "silent"),
});

describe("projection read-your-writes", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("projection");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("does not call itself caught up while an event of its own lies behind many of other categories", async () => {
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const seen: string[] = [];
    const projection = await startProjection({
      ...base(store),
      apply: async (event) => {
        await gate; // a projection that lags behind the writes
        seen.push(event.streamName);
      },
    });
    for (let i = 0; i < 12; i++) {
      const others = Array.from({ length: 100 }, (_, j) => ({ type: "Other", data: { j } }));
      await store.append(`other-${i}`, others, { expectedRevision: "no_stream" });
    }
    await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });

    try {
      expect(await projection.catchUp(200)).toBe(false);
    } finally {
      openGate(); // always, so the projection can close even when the expectation fails
    }
    expect(await projection.catchUp(5000)).toBe(true);
    expect(seen).toEqual(["thing-1"]);
    await projection.close();
  });

  it("is caught up at once when only other categories were written since", async () => {
    const projection = await startProjection({ ...base(store), apply: async () => {} });
    await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });
    expect(await projection.catchUp(5000)).toBe(true);
    await store.append("other-1", [{ type: "Other", data: {} }], { expectedRevision: "no_stream" });
    expect(await projection.catchUp(0)).toBe(true);
    await projection.close();
  });

  it("saves its checkpoint once per hundred events, however far apart their positions are", async () => {
    const sparse = sparsePositions(store, 1_000);
    const readModels = createMemoryReadModels();
    const saved: number[] = [];
    const setCheckpoint = readModels.setCheckpoint.bind(readModels);
    readModels.setCheckpoint = async (projection, position) => {
      saved.push(position);
      await setCheckpoint(projection, position);
    };
    for (let batch = 0; batch < 5; batch++) {
      const events = Array.from({ length: 50 }, (_, n) => ({ type: "Made", data: { n } }));
      await sparse.append("thing-1", events, {
        expectedRevision: batch === 0 ? "no_stream" : batch * 50 - 1,
      });
    }
    let applied = 0;
    const projection = await startProjection({
      ...base(sparse, readModels),
      apply: async () => {
        applied += 1;
      },
    });
    await projection.ready;
    expect(applied).toBe(250);
    expect(await projection.catchUp(5000)).toBe(true);
    await projection.close();
    // After 100 and 200 events, once caught up (250), and no more: not once per event.
    expect(saved.length).toBeLessThanOrEqual(4);
    expect(saved.at(-1)).toBe(await sparse.headPosition());
  });

  it("rebuilds its read models from the events when its version changes, and keeps them when it does not", async () => {
    const readModels = createMemoryReadModels(); // shared across "restarts", as MongoDB would be
    await store.append("thing-1", [{ type: "Made", data: { colour: "red" } }], {
      expectedRevision: "no_stream",
    });
    await store.append("thing-2", [{ type: "Made", data: { colour: "blue" } }], {
      expectedRevision: "no_stream",
    });
    const run = async (
      version: number,
      shape: (data: { colour: string }) => Record<string, unknown>,
      meanwhile?: () => Promise<void>,
    ) => {
      let applied = 0;
      const projection = await startProjection({
        ...base(store, readModels),
        version,
        apply: async (event, models) => {
          applied += 1;
          const id = Number(event.streamName.split("-")[1]);
          await models
            .collection("things")
            .upsert(id, event.revision, { $set: shape(event.data as { colour: string }) });
        },
      });
      await projection.ready;
      const documents = await readModels.collection("things").find({});
      await meanwhile?.();
      await projection.close();
      return { applied, documents };
    };
    const first = await run(1, (data) => ({ colour: data.colour }));
    expect(first.applied).toBe(2);
    expect(first.documents).toEqual([
      { _id: 1, colour: "red", _revision: 0 },
      { _id: 2, colour: "blue", _revision: 0 },
    ]);
    // A restart with the same version resumes from its checkpoint: nothing to apply again.
    const restart = await run(1, () => ({ never: true }));
    expect(restart.applied).toBe(0);
    expect(restart.documents).toEqual(first.documents);
    // The code changed what it writes: the previous version answers at once, while every event is
    // applied again beside it, into the new shape; then reads switch to it.
    const changed = await run(
      2,
      (data) => ({ paint: { colour: data.colour } }),
      () =>
        expect
          .poll(() => readModels.collection("things").find({}))
          .toEqual([
            { _id: 1, paint: { colour: "red" }, _revision: 0 },
            { _id: 2, paint: { colour: "blue" }, _revision: 0 },
          ]),
    );
    expect(changed.documents).toEqual(first.documents);
    expect(changed.applied).toBe(2);
  });
});

describe("projection catch-up on a shared EventStoreDB (protocol stand-in)", () => {
  it("reads a bounded number of events per query, however much other services write", async () => {
    const server = await startEventStoreDbStandIn();
    const store = createEventStoreDbStore({ connectionString: server.connectionString });
    try {
      const projection = await startProjection({ ...base(store), apply: async () => {} });
      await projection.ready;
      await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });
      expect(await projection.catchUp(5000)).toBe(true);
      for (let round = 0; round < 4; round++) {
        // Another service writes 500 events...
        for (let i = 0; i < 50; i++) {
          const events = Array.from({ length: 10 }, (_, n) => ({ type: "Other", data: { n } }));
          await store.append(`other-${round}-${i}`, events, { expectedRevision: "no_stream" });
        }
        // ...then a query: its catch-up reads the head and at most what lies after the last
        // checkpoint the server sent the subscription (every 32 events), not the 500 events.
        const before = server.eventsRead();
        expect(await projection.catchUp(5000)).toBe(true);
        expect(server.eventsRead() - before).toBeLessThanOrEqual(32 + 64);
      }
      // And an event of its own written meanwhile is still waited for and applied.
      await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: 0 });
      expect(await projection.catchUp(5000)).toBe(true);
      await projection.close();
    } finally {
      await store.close();
      await server.close();
    }
  });
});

/** The same store with positions multiplied, as EventStoreDB's byte offsets are far apart. */
function sparsePositions(store: EventStore, factor: number): EventStore {
  const out = <T extends { position: number }>(value: T): T => ({
    ...value,
    position: value.position * factor,
  });
  const inward = (position: number | undefined) =>
    position === undefined || position < 0 ? position : Math.floor(position / factor);
  return {
    ...store,
    append: async (...args) => out(await store.append(...args)),
    readStream: async (...args) => (await store.readStream(...args)).map(out),
    async *readAll(options = {}) {
      for await (const event of store.readAll({
        ...options,
        after: inward(options.after),
        until: inward(options.until),
      }))
        yield out(event);
    },
    headPosition: async () => {
      const head = await store.headPosition();
      return head < 0 ? head : head * factor;
    },
    subscribe: (options) =>
      store.subscribe({
        ...options,
        after: inward(options.after),
        handler: (event) => options.handler(out(event)),
        ...(options.onCheckpoint
          ? { onCheckpoint: (position) => options.onCheckpoint?.(position * factor) }
          : {}),
      }),
  } satisfies Partial<ProjectionOptions["eventStore"]> as EventStore;
}

describe("projection restarts", () => {
  it("restarts after its subscription fails, also while the store stays unreachable for a while", async () => {
    const dir = tempDir("projection-restart");
    const store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    let failuresLeft = 3;
    let subscriptions = 0;
    // A store whose subscription fails once, then whose head cannot be read twice.
    const flaky: EventStore = {
      ...store,
      headPosition: async () => {
        if (subscriptions > 0 && failuresLeft > 0) {
          failuresLeft -= 1;
          throw new Error("store unreachable");
        }
        return store.headPosition();
      },
      subscribe: (options) => {
        subscriptions += 1;
        if (subscriptions === 1) {
          queueMicrotask(() => options.onCaughtUp?.());
          queueMicrotask(() => options.onError?.(new Error("connection lost")));
          return { close: async () => {} };
        }
        return store.subscribe(options);
      },
    };
    const seen: number[] = [];
    const clock = new ManualClock();
    const projection = await startProjection({
      ...base(flaky),
      clock,
      apply: async (event) => {
        seen.push(event.revision);
      },
    });
    try {
      await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });
      // Four failed runs in a row, each followed by followStore's pause (1, 2, 4 and 4 s), on the
      // injected clock: moved on while nothing is applied yet.
      let moved = 0;
      const applied = async () => {
        if (seen.length === 0) {
          await clock.advance(250);
          moved += 250;
        }
        return seen;
      };
      await expect.poll(applied, { timeout: 20_000 }).toEqual([0]);
      expect(failuresLeft).toBe(0);
      expect(moved).toBeGreaterThanOrEqual(
        FOLLOW_RESTART_MS + 2 * FOLLOW_RESTART_MS + 2 * FOLLOW_RESTART_MAX_MS,
      );
    } finally {
      await projection.close();
      await store.close();
      dir.remove();
    }
  });
});
