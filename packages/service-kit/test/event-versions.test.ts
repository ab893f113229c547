import { join } from "node:path";
import { createSqliteEventStore, type EventStore, type RecordedEvent } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineEventVersions, upcasting } from "../src/event-versions.ts";

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
