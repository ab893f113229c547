import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CONCURRENT_CHANGE, type Decider, type DomainEvent, handleCommand } from "../src/decider.ts";
import { conflict, DomainError } from "../src/errors.ts";
import { IdAllocator } from "../src/ids.ts";

type CounterEvent = DomainEvent<"Incremented", { by: number }>;
const counter: Decider<{ total: number }, { type: "Increment"; by: number; max: number }, CounterEvent> = {
  initialState: () => ({ total: 0 }),
  evolve: (state, event) => ({ total: state.total + event.data.by }),
  decide: (command, state) => {
    if (state.total + command.by > command.max) throw conflict("over the maximum");
    return [{ type: "Incremented", data: { by: command.by } }];
  },
};

describe("command handling on a real event store", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("decider");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("folds the stream, decides and appends with the expected revision", async () => {
    const first = await handleCommand(store, "counter-1", counter, { type: "Increment", by: 2, max: 10 });
    expect(first).toMatchObject({ state: { total: 2 }, revision: 0 });
    const second = await handleCommand(store, "counter-1", counter, { type: "Increment", by: 3, max: 10 });
    expect(second).toMatchObject({ state: { total: 5 }, revision: 1 });
  });

  it("reads only the events after the state it remembers, another writer's included", async () => {
    let read = 0;
    const counting: EventStore = {
      ...store,
      readStream: async (name, options) => {
        const events = await store.readStream(name, options);
        read += events.length;
        return events;
      },
    };
    const by = (n: number) => Array.from({ length: n }, () => ({ type: "Incremented", data: { by: 1 } }));
    await store.append("counter-9", by(100), { expectedRevision: "no_stream" });
    const increment = { type: "Increment" as const, by: 1, max: 1000 };
    expect((await handleCommand(counting, "counter-9", counter, increment)).state).toEqual({ total: 101 });
    expect(read).toBe(100);
    read = 0;
    expect((await handleCommand(counting, "counter-9", counter, increment)).state).toEqual({ total: 102 });
    expect(read).toBe(1); // the remembered event, to check it is still there
    // Another replica writes: its events are read and folded in, on top of what is remembered.
    await store.append("counter-9", by(2), { expectedRevision: 101 });
    read = 0;
    // Refused at 104 as it should be: a state missing those two events would let it through.
    await expect(handleCommand(counting, "counter-9", counter, { ...increment, max: 104 })).rejects.toThrow(
      "over the maximum",
    );
    expect(read).toBe(3);
    const third = await handleCommand(counting, "counter-9", counter, { ...increment, max: 105 });
    expect(third).toMatchObject({ before: { total: 104 }, state: { total: 105 }, revision: 104 });
  });

  it("a stream deleted and written again is folded from its new start, not onto the remembered state", async () => {
    const increment = { type: "Increment" as const, by: 5, max: 1000 };
    await handleCommand(store, "counter-8", counter, increment);
    await handleCommand(store, "counter-8", counter, increment);
    await store.deleteStream("counter-8");
    await store.append("counter-8", [{ type: "Incremented", data: { by: 1 } }], {
      expectedRevision: "no_stream",
    });
    const after = await handleCommand(store, "counter-8", counter, increment);
    expect(after).toMatchObject({ before: { total: 1 }, state: { total: 6 }, revision: 3 });
  });

  it("keeps the invariant under concurrent commands by retrying on a revision conflict", async () => {
    const attempts = Array.from({ length: 20 }, () =>
      handleCommand(
        store,
        "counter-2",
        counter,
        { type: "Increment", by: 1, max: 10 },
        { attempts: 50 },
      ).then(
        () => "ok",
        (error: unknown) => (error instanceof DomainError ? "refused" : `failed: ${error}`),
      ),
    );
    const outcomes = await Promise.all(attempts);
    expect(outcomes.filter((o) => o === "ok")).toHaveLength(10);
    expect(outcomes.filter((o) => o === "refused")).toHaveLength(10);
    expect(await store.readStream("counter-2")).toHaveLength(10);
  });

  it("answers 409 conflict, never an internal error, when concurrent writers win every attempt", async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, () =>
        handleCommand(store, "counter-3", counter, { type: "Increment", by: 1, max: 1000 }).then(
          () => "ok",
          (error: unknown) =>
            error instanceof DomainError && error.body.status === 409 && error.body.type === "conflict"
              ? error.body.message
              : `failed: ${error}`,
        ),
      ),
    );
    expect(outcomes.filter((o) => o !== "ok" && o !== CONCURRENT_CHANGE)).toEqual([]);
    // Whatever was refused wrote nothing: the stream holds exactly the successes.
    const written = outcomes.filter((o) => o === "ok").length;
    expect(written).toBeGreaterThan(0);
    expect(await store.readStream("counter-3")).toHaveLength(written);
  });

  it("gives a caller increasing ids even when its requests alternate between replicas", async () => {
    const replicaA = new IdAllocator(store, "alternating", 50);
    const replicaB = new IdAllocator(store, "alternating", 50);
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) ids.push(await (i % 2 ? replicaB : replicaA).nextId());
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(10);
  });

  it("allocates ids that are unique and increasing per allocator, across racing allocators", async () => {
    const a = new IdAllocator(store, "thing", 5);
    const b = new IdAllocator(store, "thing", 5);
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).nextId()));
    expect(new Set(ids).size).toBe(40);
    expect(Math.min(...ids)).toBeGreaterThan(0);
    const fromA = await Promise.all([a.nextId(), a.nextId(), a.nextId()]);
    expect(fromA).toEqual([...fromA].sort((x, y) => x - y));
  });
});
