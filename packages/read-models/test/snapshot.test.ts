import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryReadModels } from "../src/memory.ts";
import type { Document, ProjectionDefinition, ReadModelStore } from "../src/port.ts";

type Item = Document & { _id: number; price: number; status: string };

const shop = (version = 1): ProjectionDefinition => ({
  name: "shop",
  version,
  collections: [
    {
      name: "items",
      indexes: [{ keys: { price: 1, _id: 1 } }, { keys: { status: 1 } }],
      queries: [
        {
          name: "a page by price",
          filter: { status: { $in: ["a"] } },
          optional: ["status"],
          sort: { price: 1, _id: 1 },
        },
        { name: "count by status", filter: { status: { $in: ["a"] } }, optional: ["status"] },
      ],
    },
    { name: "owners", indexes: [], queries: [] },
  ],
});
const statuses = ["a", "b", "c"];

describe("in-memory read-model snapshots", () => {
  let dir: { path: string; remove: () => void };
  const open = async (version = 1): Promise<ReadModelStore> => {
    const store = createMemoryReadModels({ snapshotDir: dir.path });
    await store.defineProjection(shop(version));
    return store;
  };
  /** Generation 0 of version 1, the one a store that restored nothing serves. */
  const firstGeneration = (store: ReadModelStore) => store.newGeneration(shop());
  /** 3,000 items over several index blocks, then moves and deletes; the expected ids per query. */
  const fill = async (store: ReadModelStore) => {
    const items = store.collection<Item>("items");
    const model = new Map<number, { price: number; status: string }>();
    for (let id = 1; id <= 3_000; id++) {
      const item = { price: (id * 7919) % 1_000, status: statuses[id % 3]! };
      model.set(id, item);
      await items.upsert(id, 1, { $set: item });
    }
    for (let id = 1; id <= 3_000; id += 7) {
      const item = { price: (id * 31) % 997, status: statuses[(id + 1) % 3]! };
      model.set(id, item);
      await items.upsert(id, 2, { $set: item });
    }
    for (let id = 5; id <= 3_000; id += 11) {
      model.delete(id);
      await items.deleteOne(id, 3);
    }
    await store.collection("owners").upsert("ann", 4, { $set: { shops: ["x"] } });
    return model;
  };
  const expectAnswers = async (
    store: ReadModelStore,
    model: Map<number, { price: number; status: string }>,
  ) => {
    const items = store.collection<Item>("items");
    for (const wanted of [["a"], ["b", "c"]]) {
      const ids = [...model.entries()]
        .filter(([, item]) => wanted.includes(item.status))
        .sort(([a, x], [b, y]) => x.price - y.price || a - b)
        .map(([id]) => id);
      const page = await items.find(
        { status: { $in: wanted } },
        { sort: { price: 1, _id: 1 }, skip: 700, limit: 50 },
      );
      expect(page.map((item) => item._id)).toEqual(ids.slice(700, 750));
      const last = await items.find({ status: { $in: wanted } }, { sort: { price: -1, _id: -1 }, limit: 3 });
      expect(last.map((item) => item._id)).toEqual(ids.slice(-3).reverse());
      expect(await items.count({ status: { $in: wanted } })).toBe(ids.length);
    }
    expect(await items.count()).toBe(model.size);
  };

  beforeEach(() => {
    dir = tempDir("rm-snapshot");
  });
  afterEach(() => dir.remove());

  it("keeps sorted pages and counts right across many index blocks", async () => {
    const store = await open();
    await expectAnswers(store, await fill(store));
  });

  it("restores the collections, tombstones and position a snapshot was saved with", async () => {
    const first = await open();
    const model = await fill(first);
    await first.snapshots!.save(shop(), await firstGeneration(first), 42);

    const second = await open();
    expect(await second.snapshots!.restore(shop(), { notAfter: 42 })).toEqual({ position: 42 });
    await expectAnswers(second, model);
    expect(await second.collection("owners").findOne({ _id: "ann" })).toEqual({
      _id: "ann",
      shops: ["x"],
      _revision: 4,
    });
    // A deleted item's tombstone came back too: replaying its older event changes nothing.
    expect(await second.collection("items").upsert(5, 2, { $set: { price: 1, status: "a" } })).toBe(false);
    expect(await second.collection("items").findOne({ _id: 5 })).toBeNull();
    // Writes after the restore move documents in the rebuilt indexes.
    await second.collection("items").upsert(1, 9, { $set: { price: -1, status: "a" } });
    model.set(1, { price: -1, status: "a" });
    await expectAnswers(second, model);
  });

  it("gives back values JSON would change (dates, -0, undefined) as they were, beside plain documents", async () => {
    const first = await open();
    const owners = first.collection("owners");
    const since = new Date("2026-01-02T03:04:05.006Z");
    await owners.upsert("odd", 1, { $set: { since, balance: -0, note: undefined, tags: ["a", null] } });
    for (let id = 0; id < 2_500; id++)
      await owners.upsert(`plain-${id}`, 1, { $set: { shops: [id], name: "é ✓" } });
    await first.snapshots!.save(shop(), await firstGeneration(first), 7);

    const second = await open();
    expect(await second.snapshots!.restore(shop(), { notAfter: 7 })).toEqual({ position: 7 });
    const odd = await second.collection("owners").findOne({ _id: "odd" });
    expect(odd?.since).toEqual(since);
    expect(Object.is(odd?.balance, -0)).toBe(true);
    expect(odd && "note" in odd).toBe(true);
    expect(odd?.tags).toEqual(["a", null]);
    expect(await second.collection("owners").findOne({ _id: "plain-2499" })).toEqual({
      _id: "plain-2499",
      shops: [2499],
      name: "é ✓",
      _revision: 1,
    });
  });

  it("captures the documents when save is called, not when the file is written", async () => {
    const store = await open();
    const items = store.collection<Item>("items");
    await items.upsert(1, 1, { $set: { price: 1, status: "a" } });
    const saving = store.snapshots!.save(shop(), await firstGeneration(store), 1);
    await items.upsert(1, 2, { $set: { price: 2, status: "b" } });
    await items.upsert(2, 1, { $set: { price: 3, status: "c" } });
    await saving;

    const restored = await open();
    await restored.snapshots!.restore(shop(), { notAfter: 1 });
    expect(await restored.collection("items").findOne({ _id: 1 })).toEqual({
      _id: 1,
      price: 1,
      status: "a",
      _revision: 1,
    });
    expect(await restored.collection("items").count()).toBe(1);
  });

  describe("a snapshot that cannot be trusted is ignored, the collections left empty", () => {
    const saved = async () => {
      const store = await open();
      await fill(store);
      await store.snapshots!.save(shop(), await firstGeneration(store), 42);
      const [file] = readdirSync(dir.path).filter((name) => name.endsWith(".snapshot"));
      return join(dir.path, file!);
    };
    const expectIgnored = async (version = 1, notAfter = 42) => {
      const store = await open(version);
      const restored = await store.snapshots!.restore(shop(version), { notAfter });
      expect(restored).toHaveProperty("ignored");
      expect(await store.collection("items").count()).toBe(0);
      return restored;
    };

    it("none written yet", async () => {
      expect(await expectIgnored()).toEqual({ ignored: "none" });
    });
    it("cut short", async () => {
      const file = await saved();
      const bytes = readFileSync(file);
      for (const length of [0, 10, Math.floor(bytes.length / 2), bytes.length - 1]) {
        writeFileSync(file, bytes.subarray(0, length));
        await expectIgnored();
      }
    });
    it("a byte changed", async () => {
      const file = await saved();
      const bytes = readFileSync(file);
      const at = Math.floor(bytes.length / 3);
      bytes[at] = bytes[at]! ^ 0xff;
      writeFileSync(file, bytes);
      await expectIgnored();
    });
    it("of another version of the projection", async () => {
      await saved();
      await expectIgnored(2);
    });
    it("past the event store's head (the store was emptied or replaced)", async () => {
      await saved();
      await expectIgnored(1, 41);
    });
  });

  it("removes temporary files of dead writers, and snapshots of versions before the previous one", async () => {
    const store = await open();
    await fill(store);
    await store.snapshots!.save(shop(), await firstGeneration(store), 1);
    await store.snapshots!.save(shop(), await firstGeneration(store), 2);
    // Left by a process killed while writing (no such pid).
    writeFileSync(join(dir.path, "shop_v1.snapshot.999999999.1.tmp"), "partial");
    expect(await (await open()).snapshots!.restore(shop(), { notAfter: 2 })).toEqual({ position: 2 });
    expect(readdirSync(dir.path)).toEqual(["shop_v1.snapshot"]);
    expect(await (await open(2)).snapshots!.restore(shop(2), { notAfter: 2 })).toEqual({ ignored: "none" });
    expect(readdirSync(dir.path)).toEqual(["shop_v1.snapshot"]);
    await (await open(3)).snapshots!.restore(shop(3), { notAfter: 2 });
    expect(readdirSync(dir.path)).toEqual([]);
  });

  it("no snapshots without a directory", () => {
    expect(createMemoryReadModels().snapshots).toBeUndefined();
  });
});
