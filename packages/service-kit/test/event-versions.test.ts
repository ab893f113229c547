import { join } from "node:path";
import { createSqliteEventStore, type EventStore, type RecordedEvent } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Decider, type DomainEvent, handleCommand } from "../src/decider.ts";
import { defineEventVersions, split, upcasting } from "../src/event-versions.ts";
import { readHistory } from "../src/history.ts";
import { createLogger } from "../src/logger.ts";
import { startProjection } from "../src/projection.ts";

// Version 1 of CheeseAdded called the price `price`; version 2 calls it `pricePerKg`; version 3
// keeps the name in `label`. CheesePriced never changed.
const versions = defineEventVersions([
  {
    type: "CheeseAdded",
    version: 3,
    upcast: ({ name, ...rest }: { name: string; pricePerKg: number }) => ({ ...rest, label: name }),
  },
  {
    type: "CheeseAdded",
    version: 2,
    upcast: ({ price, ...rest }: { name: string; price: number }) => ({ ...rest, pricePerKg: price }),
  },
]);

describe("defineEventVersions", () => {
  it("refuses a step declared twice, a gap, or a version below 2", () => {
    const step = (version: number) => ({ type: "CheeseAdded", version, upcast: (data: unknown) => data });
    expect(() => defineEventVersions([step(2), step(2)])).toThrow("CheeseAdded: version 2 declared twice");
    expect(() => defineEventVersions([step(2), step(4)])).toThrow("version 4 declared without version 3");
    expect(() => defineEventVersions([step(1)])).toThrow("version 2 or later, not 1");
  });

  it("says each type's current version: its last step, else 1", () => {
    expect(versions.current("CheeseAdded")).toBe(3);
    expect(versions.current("CheesePriced")).toBe(1);
  });
});

describe("upcasting", () => {
  let dir: ReturnType<typeof tempDir>;
  let raw: EventStore;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("event-versions");
    raw = createSqliteEventStore({ file: join(dir.path, "events.sqlite") });
    store = upcasting(raw, versions);
  });
  afterEach(async () => {
    await raw.close();
    dir.remove();
  });

  const stored = async () => {
    // As written by earlier code: version 1 (no version), and version 2.
    await raw.append(
      "cheese-1",
      [
        { type: "CheeseAdded", data: { name: "Brie", price: 12 } },
        { type: "CheeseAdded", data: { name: "Comté", pricePerKg: 30 }, version: 2 },
        { type: "CheesePriced", data: { price: 14 } },
      ],
      { expectedRevision: "no_stream" },
    );
  };
  const latest = [
    { type: "CheeseAdded", version: 3, data: { label: "Brie", pricePerKg: 12 } },
    { type: "CheeseAdded", version: 3, data: { label: "Comté", pricePerKg: 30 } },
    { type: "CheesePriced", version: 1, data: { price: 14 } },
  ];
  const shapes = (events: RecordedEvent[]) =>
    events.map(({ type, version, data }) => ({ type, version, data }));

  it("hands out every event in its type's latest shape, from readStream, readAll and subscriptions", async () => {
    await stored();
    expect(shapes(await store.readStream("cheese-1"))).toEqual(latest);
    const all: RecordedEvent[] = [];
    for await (const event of store.readAll({ categories: ["cheese"] })) all.push(event);
    expect(shapes(all)).toEqual(latest);
    const received: RecordedEvent[] = [];
    const subscription = store.subscribe({
      categories: ["cheese"],
      handler: async (event) => {
        received.push(event);
      },
    });
    await expect.poll(() => received.length).toBe(3);
    await subscription.close();
    expect(shapes(received)).toEqual(latest);
    // What the store holds is left as written.
    expect(shapes(await raw.readStream("cheese-1"))).toEqual([
      { type: "CheeseAdded", version: 1, data: { name: "Brie", price: 12 } },
      { type: "CheeseAdded", version: 2, data: { name: "Comté", pricePerKg: 30 } },
      { type: "CheesePriced", version: 1, data: { price: 14 } },
    ]);
  });

  it("stamps what is appended with its type's current version, and reads it back untouched", async () => {
    await store.append(
      "cheese-2",
      [
        { type: "CheeseAdded", data: { label: "Gouda", pricePerKg: 9 } },
        { type: "CheesePriced", data: { price: 10 } },
      ],
      { expectedRevision: "no_stream" },
    );
    const expected = [
      { type: "CheeseAdded", version: 3, data: { label: "Gouda", pricePerKg: 9 } },
      { type: "CheesePriced", version: 1, data: { price: 10 } },
    ];
    expect(shapes(await raw.readStream("cheese-2"))).toEqual(expected);
    expect(shapes(await store.readStream("cheese-2"))).toEqual(expected);
  });

  it("leaves an event of a newer version than it knows as it is", async () => {
    await raw.append("cheese-3", [{ type: "CheeseAdded", data: { title: "Feta" }, version: 4 }], {
      expectedRevision: "no_stream",
    });
    expect(shapes(await store.readStream("cheese-3"))).toEqual([
      { type: "CheeseAdded", version: 4, data: { title: "Feta" } },
    ]);
  });

  it("is the store itself while every type is at version 1", () => {
    expect(upcasting(raw, defineEventVersions([]))).toBe(raw);
  });
});

// Version 1 of CheeseChanged carried a price and a stock; version 2 is no longer written: such an
// event is read as the CheesePriced and CheeseRestocked that new code writes instead.
const splitting = defineEventVersions([
  {
    type: "CheeseChanged",
    version: 2,
    upcast: ({ price, stock }: { price: number; stock: number }) =>
      split({ type: "CheesePriced", data: { price } }, { type: "CheeseRestocked", data: { stock } }),
  },
]);

describe("an upcaster that splits an event", () => {
  let dir: ReturnType<typeof tempDir>;
  let raw: EventStore;
  let store: EventStore;
  beforeEach(async () => {
    dir = tempDir("event-split");
    raw = createSqliteEventStore({ file: join(dir.path, "events.sqlite") });
    store = upcasting(raw, splitting);
    await raw.append("other-1", [{ type: "Other", data: {} }], { expectedRevision: "no_stream" });
    await raw.append(
      "cheese-1",
      [
        { type: "CheesePriced", data: { price: 10 } },
        { id: "c0ffee00-0000-4000-8000-000000000001", type: "CheeseChanged", data: { price: 12, stock: 5 } },
        { type: "CheesePriced", data: { price: 14 } },
      ],
      { expectedRevision: "no_stream" },
    );
  });
  afterEach(async () => {
    await raw.close();
    dir.remove();
  });

  const read = [
    { type: "CheesePriced", data: { price: 10 } },
    { type: "CheesePriced", data: { price: 12 } },
    { type: "CheeseRestocked", data: { stock: 5 } },
    { type: "CheesePriced", data: { price: 14 } },
  ];
  const seen = (events: RecordedEvent[]) => events.map(({ type, data }) => ({ type, data }));

  it("reads it as its parts everywhere: distinct ids, revisions rising to the stored one, the position on the last", async () => {
    const [, changed] = await raw.readStream("cheese-1");
    const events = await store.readStream("cheese-1");
    expect(seen(events)).toEqual(read);
    expect(events.map(({ id, revision, position }) => ({ id, revision, position }))).toEqual([
      expect.objectContaining({ revision: 0 }),
      { id: `${changed!.id}#1`, revision: 0.5, position: changed!.position - 1 },
      { id: `${changed!.id}#2`, revision: 1, position: changed!.position },
      expect.objectContaining({ revision: 2 }),
    ]);
    const all: RecordedEvent[] = [];
    for await (const event of store.readAll({ categories: ["cheese"] })) all.push(event);
    expect(all).toEqual(events);
    // Read from the stored event on, or one stored event at a time: both parts, together.
    expect(seen(await store.readStream("cheese-1", { fromRevision: 1, maxCount: 1 }))).toEqual(
      read.slice(1, 3),
    );
    const received: RecordedEvent[] = [];
    const subscription = store.subscribe({
      categories: ["cheese"],
      handler: async (event) => {
        received.push(event);
      },
    });
    await expect.poll(() => received.length).toBe(4);
    await subscription.close();
    expect(received).toEqual(events);
  });

  it("is never left out of a catch-up as overwritten: the store compares stored types, which an upcaster changes", async () => {
    // Past the first page, so pages are read ahead (where a catch-up leaves overwritten events out).
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 600; i++)
      appends.push(
        raw.append(
          "cheese-2",
          [
            { type: "CheesePriced", data: { price: i } },
            { type: "CheeseChanged", data: { price: i, stock: i } },
          ],
          { expectedRevision: "any" },
        ),
      );
    await Promise.all(appends);
    const received: RecordedEvent[] = [];
    let caughtUp = false;
    const subscription = store.subscribe({
      categories: ["cheese"],
      overwrites: ["CheesePriced", "CheeseChanged"],
      handler: async (event) => {
        received.push(event);
      },
      onCaughtUp: () => {
        caughtUp = true;
      },
    });
    await expect.poll(() => caughtUp).toBe(true);
    await subscription.close();
    const restocked = received.filter(
      (event) => event.streamName === "cheese-2" && event.type === "CheeseRestocked",
    );
    expect(restocked.map((event) => (event.data as { stock: number }).stock)).toEqual(
      Array.from({ length: 600 }, (_, i) => i),
    );
  });

  it("pages a history through the parts, whatever page ends between them", async () => {
    for (const limit of [1, 2, 3]) {
      const pages: unknown[] = [];
      let cursor: string | undefined;
      do {
        const page = await readHistory(store, "cheese-1", { cursor, limit }, ({ type, data }) => ({
          type,
          data,
        }));
        pages.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(pages).toEqual(read);
    }
  });

  it("keeps a projection's checkpoint before the pair until both parts are applied: a restart in between skips and doubles nothing", async () => {
    const readModels = createMemoryReadModels(); // kept across the restart, as MongoDB would be
    const saved: number[] = [];
    const setCheckpoint = readModels.setCheckpoint.bind(readModels);
    readModels.setCheckpoint = async (projection, position) => {
      saved.push(position);
      await setCheckpoint(projection, position);
    };
    const run = async (crashOnRestock: boolean) => {
      const applied: string[] = [];
      let crashed: () => void = () => {};
      const crash = new Promise<void>((resolve) => {
        crashed = resolve;
      });
      const projection = await startProjection({
        name: "cheeses",
        version: 1,
        collections: [
          { name: "cheeses", indexes: [], queries: [{ name: "all", filter: {}, scans: "a test's few" }] },
        ],
        eventStore: store,
        readModels,
        categories: ["cheese"],
        logger: createLogger("test", "silent"),
        checkpointEvery: 1,
        apply: async (event, models) => {
          if (crashOnRestock && event.type === "CheeseRestocked") {
            crashed();
            throw new Error("the process dies here");
          }
          applied.push(event.type);
          await models
            .collection("cheeses")
            .upsert(1, event.revision, { $set: event.data as Record<string, number>, $inc: { applied: 1 } });
        },
      });
      if (crashOnRestock) await crash;
      else await projection.ready;
      await projection.close();
      return applied;
    };
    expect(await run(true)).toEqual(["CheesePriced", "CheesePriced"]);
    const [, changed] = await raw.readStream("cheese-1");
    // Checkpoints saved so far lie before the pair's stored event, however many were saved.
    expect(saved.length).toBeGreaterThan(0);
    expect(Math.max(...saved)).toBeLessThan(changed!.position);
    // The restart reads the pair again, from its first part.
    expect(await run(false)).toEqual(["CheesePriced", "CheeseRestocked", "CheesePriced"]);
    // The first part, applied twice, counted once (the revision guard): four events, four applied.
    expect(await readModels.collection("cheeses").find({})).toEqual([
      expect.objectContaining({ price: 14, stock: 5, applied: 4 }),
    ]);
  });

  it("folds into a decider's state, which appends after the stored event and remembers its last part", async () => {
    type Event = DomainEvent<"CheesePriced" | "CheeseRestocked", { price?: number; stock?: number }>;
    const cheese: Decider<{ price?: number; stock?: number }, { price?: number }, Event> = {
      initialState: () => ({}),
      evolve: (state, event) => ({ ...state, ...event.data }),
      decide: ({ price }) => (price === undefined ? [] : [{ type: "CheesePriced", data: { price } }]),
    };
    let read = 0;
    const counting: EventStore = {
      ...store,
      readStream: async (name, options) => {
        const events = await store.readStream(name, options);
        read += events.length;
        return events;
      },
    };
    await raw.append(
      "cheese-2",
      [
        { type: "CheesePriced", data: { price: 10 } },
        { type: "CheeseChanged", data: { price: 12, stock: 5 } },
      ],
      { expectedRevision: "no_stream" },
    );
    expect(await handleCommand(counting, "cheese-2", cheese, {})).toMatchObject({
      state: { price: 12, stock: 5 },
      revision: 1,
    });
    read = 0;
    // Remembered: only the stored event is read again (both its parts), to check it is still there.
    expect((await handleCommand(counting, "cheese-2", cheese, {})).state).toEqual({ price: 12, stock: 5 });
    expect(read).toBe(2);
    // Appended with the stored event's revision as the expected one.
    expect(await handleCommand(counting, "cheese-2", cheese, { price: 13 })).toMatchObject({
      state: { price: 13, stock: 5 },
      revision: 2,
    });
  });

  it("into one part is a type renamed: the event keeps its id", async () => {
    const renamed = upcasting(
      raw,
      defineEventVersions([
        {
          type: "CheeseChanged",
          version: 2,
          upcast: (data: unknown) => split({ type: "CheeseAltered", data }),
        },
      ]),
    );
    const [stored] = await raw.readStream("cheese-1", { fromRevision: 1 });
    const [read] = await renamed.readStream("cheese-1", { fromRevision: 1 });
    expect(read).toEqual({ ...stored, type: "CheeseAltered", version: 1 });
  });
});
