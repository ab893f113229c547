import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CONCURRENT_CHANGE,
  commandAlongside,
  type Decider,
  type DomainEvent,
  handleCommand,
  readState,
} from "../src/decider.ts";
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

/** A switch: off at first; turning off an off switch decides nothing, dimming it is refused. */
type SwitchEvent = DomainEvent<"TurnedOn" | "TurnedOff" | "Dimmed", Record<string, never>>;
const lamp: Decider<{ on: boolean }, { type: "TurnOn" | "TurnOff" | "Dim" }, SwitchEvent> = {
  initialState: () => ({ on: false }),
  evolve: (state, event) => ({
    on: event.type === "TurnedOff" ? false : event.type === "TurnedOn" || state.on,
  }),
  decide: (command, state) => {
    if (command.type === "TurnOn") return state.on ? [] : [{ type: "TurnedOn", data: {} }];
    if (command.type === "TurnOff") return state.on ? [{ type: "TurnedOff", data: {} }] : [];
    if (!state.on) throw conflict("the lamp is off");
    return [{ type: "Dimmed", data: {} }];
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

  it("reads a stream's state now (readState) from what it remembers: every event recorded since, no more", async () => {
    const reads: number[] = [];
    const counting: EventStore = {
      ...store,
      readStream: async (name, options) => {
        const events = await store.readStream(name, options);
        reads.push(events.length);
        return events;
      },
    };
    const by = (n: number) => Array.from({ length: n }, () => ({ type: "Incremented", data: { by: 1 } }));
    await store.append("counter-7", by(50), { expectedRevision: "no_stream" });
    expect(await readState(counting, "counter-7", counter)).toEqual({ total: 50 });
    expect(await readState(counting, "counter-7", counter)).toEqual({ total: 50 });
    await store.append("counter-7", by(2), { expectedRevision: 49 });
    expect(await readState(counting, "counter-7", counter)).toEqual({ total: 52 });
    expect(reads).toEqual([50, 1, 3]); // then only the remembered event and what came after it
    // A command decides on what the reads remembered, and the reads on what it wrote.
    await handleCommand(counting, "counter-7", counter, { type: "Increment", by: 3, max: 100 });
    expect(await readState(counting, "counter-7", counter)).toEqual({ total: 55 });
    expect(reads).toEqual([50, 1, 3, 1, 1]);
    await store.deleteStream("counter-7");
    expect(await readState(counting, "counter-7", counter)).toEqual({ total: 0 });
  });

  it("answers the reads of one stream asked together with one read, which sees every event recorded before each", async () => {
    const reads: string[] = [];
    const counting: EventStore = {
      ...store,
      readStream: async (name, options) => {
        reads.push(name);
        return store.readStream(name, options);
      },
    };
    const one = { type: "Incremented", data: { by: 1 } };
    await store.append("counter-5", [one], { expectedRevision: "no_stream" });
    const together = await Promise.all([1, 2, 3].map(() => readState(counting, "counter-5", counter)));
    expect(together).toEqual([{ total: 1 }, { total: 1 }, { total: 1 }]);
    expect(reads).toEqual(["counter-5"]);
    // Asked after that read: a read of its own, which sees what was recorded since.
    await store.append("counter-5", [one], { expectedRevision: 0 });
    expect(await readState(counting, "counter-5", counter)).toEqual({ total: 2 });
    expect(reads).toEqual(["counter-5", "counter-5"]);
  });

  it("decides on a remembered state unread when told it is current, and on the stream when it has moved since", async () => {
    const reads: string[] = [];
    const counting: EventStore = {
      ...store,
      readStream: async (name, options) => {
        reads.push(name);
        return store.readStream(name, options);
      },
    };
    const increment = (max: number) => ({ type: "Increment" as const, by: 1, max });
    const hint = { rememberedIsCurrent: true };
    await handleCommand(counting, "counter-6", counter, increment(10), { newStream: true });
    expect(await handleCommand(counting, "counter-6", counter, increment(10), hint)).toMatchObject({
      state: { total: 2 },
      revision: 1,
    });
    expect(reads).toEqual([]);
    // Another replica moved it: the guess's append is refused, the stream read, the limit kept.
    await store.append("counter-6", [{ type: "Incremented", data: { by: 7 } }], { expectedRevision: 1 });
    await expect(handleCommand(counting, "counter-6", counter, increment(9), hint)).rejects.toThrow(
      "over the maximum",
    );
    expect(reads).toEqual(["counter-6"]);
    expect(await handleCommand(counting, "counter-6", counter, increment(10), hint)).toMatchObject({
      state: { total: 10 },
      revision: 3,
    });
  });

  describe("a command on another stream in the same append (commandAlongside)", () => {
    it("is written after the command's own events when asked, unread, and remembered as written", async () => {
      const reads: string[] = [];
      const writes: string[][] = [];
      const counting: EventStore = {
        ...store,
        readStream: (name, options) => {
          reads.push(name);
          return store.readStream(name, options);
        },
        appendStreams: (appends) => {
          writes.push(appends.map(({ streamName }) => streamName));
          return store.appendStreams(appends);
        },
      };
      const lamps = ["lamp-21", "lamp-22"].map((name) =>
        commandAlongside(counting, name, lamp, { type: "TurnOn" }, { after: true }),
      );
      const increment = { type: "Increment" as const, by: 1, max: 10 };
      await handleCommand(counting, "counter-20", counter, increment, { newStream: true, alongside: lamps });

      // One write, the command's stream first; nothing read.
      expect(writes).toEqual([["counter-20", "lamp-21", "lamp-22"]]);
      expect(reads).toEqual([]);
      // The next command on a lamp decides on the state remembered, unread.
      const off = await handleCommand(
        counting,
        "lamp-21",
        lamp,
        { type: "TurnOff" },
        { rememberedIsCurrent: true },
      );
      expect(off).toMatchObject({ state: { on: false }, revision: 1 });
      expect(reads).toEqual([]);
    });

    it("on a stream that exists decides on what it holds, with its revision", async () => {
      await store.append("lamp-23", [{ type: "TurnedOn", data: {} }], { expectedRevision: "no_stream" });
      const increment = { type: "Increment" as const, by: 1, max: 10 };
      await handleCommand(store, "counter-21", counter, increment, {
        alongside: [commandAlongside(store, "lamp-23", lamp, { type: "TurnOn" }, { after: true })],
      });
      // Already on: nothing more written to it; the command's own events stand.
      expect((await store.readStream("lamp-23")).map(({ type }) => type)).toEqual(["TurnedOn"]);
      expect(await store.readStream("counter-21")).toHaveLength(1);
    });
  });

  describe("a stream expected to be new (newStream)", () => {
    let reads: string[];
    let counting: EventStore;
    beforeEach(() => {
      reads = [];
      counting = {
        ...store,
        readStream: (name, options) => {
          reads.push(name);
          return store.readStream(name, options);
        },
      };
    });
    const on = { type: "TurnOn" as const };
    const written = (name: string) => store.readStream(name).then((events) => events.map((e) => e.type));

    it("is written without being read, and remembered as written", async () => {
      expect(await handleCommand(counting, "lamp-1", lamp, on, { newStream: true })).toMatchObject({
        state: { on: true },
        revision: 0,
      });
      expect(reads).toEqual([]);
      await handleCommand(counting, "lamp-1", lamp, { type: "TurnOff" }, { newStream: true });
      expect(await written("lamp-1")).toEqual(["TurnedOn", "TurnedOff"]);
    });

    it("that exists after all is read and decided on what it holds, not on the guess", async () => {
      await store.append("lamp-2", [{ type: "TurnedOn", data: {} }], { expectedRevision: "no_stream" });
      // On the guess (off) this would append TurnedOn; the stream says it is on already.
      const result = await handleCommand(counting, "lamp-2", lamp, on, { newStream: true });
      expect(result).toMatchObject({ state: { on: true }, newEvents: [], revision: 0 });
      expect(reads).toEqual(["lamp-2"]);
      expect(await written("lamp-2")).toEqual(["TurnedOn"]);
    });

    it("is read before a command refused or deciding nothing on the guess is answered", async () => {
      await store.append("lamp-3", [{ type: "TurnedOn", data: {} }], { expectedRevision: "no_stream" });
      await handleCommand(counting, "lamp-3", lamp, { type: "Dim" }, { newStream: true });
      await store.append("lamp-4", [{ type: "TurnedOn", data: {} }], { expectedRevision: "no_stream" });
      await handleCommand(counting, "lamp-4", lamp, { type: "TurnOff" }, { newStream: true });
      expect(await written("lamp-3")).toEqual(["TurnedOn", "Dimmed"]);
      expect(await written("lamp-4")).toEqual(["TurnedOn", "TurnedOff"]);
      await expect(
        handleCommand(counting, "lamp-5", lamp, { type: "Dim" }, { newStream: true }),
      ).rejects.toThrow("the lamp is off");
    });

    it("that another writer wrote since it was remembered is read, not guessed", async () => {
      await handleCommand(counting, "lamp-6", lamp, on, { newStream: true });
      await store.append("lamp-6", [{ type: "TurnedOff", data: {} }], { expectedRevision: 0 });
      await handleCommand(counting, "lamp-6", lamp, on, { newStream: true });
      expect(await written("lamp-6")).toEqual(["TurnedOn", "TurnedOff", "TurnedOn"]);
    });

    it("of racing writers, one writes it; the others decide on what it wrote", async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, () => handleCommand(counting, "lamp-7", lamp, on, { newStream: true })),
      );
      expect(results.filter((r) => r.newEvents.length > 0)).toHaveLength(1);
      expect(await written("lamp-7")).toEqual(["TurnedOn"]);
    });
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

  it("reads the id blocks once for the ids asked for in one turn, and hands them out in order", async () => {
    let reads = 0;
    const counting: EventStore = {
      ...store,
      readStream: (name, options) => {
        reads += 1;
        return store.readStream(name, options);
      },
    };
    const ids = new IdAllocator(counting, "burst", 100);
    await ids.nextId(); // the first block
    reads = 0;
    const burst = await Promise.all(Array.from({ length: 20 }, () => ids.nextId()));
    expect(burst).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    expect(reads).toBe(1);
    // Another replica reserves a later block: the next turn's ids come after it.
    const other = new IdAllocator(store, "burst", 100);
    const fromOther = await other.nextId();
    const after = await Promise.all([ids.nextId(), ids.nextId()]);
    expect(after[0]).toBeGreaterThan(fromOther);
    expect(after[1]).toBe(after[0]! + 1);
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
