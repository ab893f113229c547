import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type {
  Collection,
  Document,
  Filter,
  FindOptions,
  ProjectionDefinition,
  ReadModelStore,
} from "../src/port.ts";

export interface ReadModelFixture {
  store: ReadModelStore;
  cleanup(): Promise<void>;
}

interface Cheese extends Document {
  _id: number;
  name: string;
  price: number;
  status: string;
  category: { id: number; name: string };
  tags: { id: number; name: string }[];
}

const french = { id: 1, name: "French" };
const cow = { id: 2, name: "Cow" };
// Prices and statuses repeat on purpose so sorts have ties to break.
const cheeses: Cheese[] = [
  {
    _id: 1,
    name: "Brie de Meaux",
    price: 12,
    status: "available",
    category: { id: 1, name: "Soft" },
    tags: [french, cow],
  },
  {
    _id: 2,
    name: "Comté",
    price: 20,
    status: "available",
    category: { id: 2, name: "Hard" },
    tags: [french],
  },
  {
    _id: 3,
    name: "brie noir",
    price: 12,
    status: "discontinued",
    category: { id: 1, name: "Soft" },
    tags: [],
  },
  {
    _id: 4,
    name: "Gouda",
    price: 9,
    status: "available",
    category: { id: 2, name: "Hard" },
    tags: [{ id: 3, name: "Dutch" }, cow],
  },
  {
    _id: 5,
    name: "Roquefort",
    price: 20,
    status: "out_of_stock",
    category: { id: 3, name: "Blue" },
    tags: [french, { id: 4, name: "Sheep" }],
  },
];
// Inserted out of _id order, so insertion order cannot pass for the _id order the contract promises.
const insertionOrder = [3, 1, 5, 2, 4];

const ids = (documents: Document[]) => documents.map((document) => document._id);

/** Behaviour every ReadModelStore adapter must share; `factory` gives a fresh, empty store per test. */
export function readModelContract(name: string, factory: () => Promise<ReadModelFixture>): void {
  describe(`${name} read-model contract`, () => {
    let fixture: ReadModelFixture;
    let store: ReadModelStore;
    let cheese: Collection<Cheese>;

    beforeEach(async () => {
      fixture = await factory();
      store = fixture.store;
      cheese = store.collection<Cheese>("cheeses");
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    const seed = async () => {
      for (const id of insertionOrder) {
        const { _id, ...fields } = cheeses.find((c) => c._id === id)!;
        expect(await cheese.upsert(_id, 1, { $set: fields })).toBe(true);
      }
    };

    describe("upsert", () => {
      it("creates the document from its _id, then updates it with $set, $unset and $inc", async () => {
        const docs = store.collection("docs");
        expect(
          await docs.upsert(1, 1, { $set: { name: "Brie", "category.name": "Soft" }, $inc: { stock: 5 } }),
        ).toBe(true);
        expect(await docs.findOne({ _id: 1 })).toEqual({
          _id: 1,
          name: "Brie",
          category: { name: "Soft" },
          stock: 5,
          _revision: 1,
        });
        expect(
          await docs.upsert(1, 2, { $set: { price: 11 }, $unset: { category: "" }, $inc: { stock: -2 } }),
        ).toBe(true);
        expect(await docs.findOne({ _id: 1 })).toEqual({
          _id: 1,
          name: "Brie",
          price: 11,
          stock: 3,
          _revision: 2,
        });
      });

      it("applies $push, $addToSet and $pull to arrays", async () => {
        const docs = store.collection("docs");
        await docs.upsert(1, 1, { $set: { tags: [french] }, $push: { history: "added" } });
        await docs.upsert(1, 2, { $push: { tags: cow, history: "tagged" }, $addToSet: { labels: "x" } });
        await docs.upsert(1, 3, { $addToSet: { labels: { $each: ["x", "y"] } } });
        await docs.upsert(1, 4, { $pull: { tags: { id: french.id } } });
        expect(await docs.findOne({ _id: 1 })).toEqual({
          _id: 1,
          tags: [cow],
          history: ["added", "tagged"],
          labels: ["x", "y"],
          _revision: 4,
        });
      });

      it("changes nothing and returns false for an equal or lower revision", async () => {
        const docs = store.collection("docs");
        await docs.upsert("order-7", 5, { $set: { status: "placed" }, $inc: { lines: 1 } });
        expect(await docs.upsert("order-7", 5, { $set: { status: "replayed" }, $inc: { lines: 1 } })).toBe(
          false,
        );
        expect(await docs.upsert("order-7", 3, { $set: { status: "older" } })).toBe(false);
        expect(await docs.findOne({ _id: "order-7" })).toEqual({
          _id: "order-7",
          status: "placed",
          lines: 1,
          _revision: 5,
        });
        expect(await docs.upsert("order-7", 6, { $set: { status: "shipped" } })).toBe(true);
        expect(await docs.findOne({ _id: "order-7" })).toMatchObject({ status: "shipped", _revision: 6 });
      });

      it("rejects a replacement document or a change of _id, leaving the document as it was", async () => {
        const docs = store.collection("docs");
        await docs.upsert(1, 1, { $set: { name: "Brie" } });
        await expect(docs.upsert(1, 2, { name: "Replaced" })).rejects.toThrow();
        await expect(docs.upsert(1, 2, { $set: { _id: 2 } })).rejects.toThrow();
        expect(await docs.findOne({ _id: 1 })).toEqual({ _id: 1, name: "Brie", _revision: 1 });
      });
    });

    describe("queries", () => {
      beforeEach(seed);

      it("findOne returns the matching document or null", async () => {
        expect(await cheese.findOne({ _id: 4 })).toEqual({ ...cheeses[3], _revision: 1 });
        expect(await cheese.findOne({ name: "Comté" })).toMatchObject({ _id: 2 });
        expect(await cheese.findOne({ name: "Cheddar" })).toBeNull();
      });

      it("filters with $in, $gt/$lt and $regex (case-insensitive)", async () => {
        expect(ids(await cheese.find({ status: { $in: ["discontinued", "out_of_stock"] } }))).toEqual([3, 5]);
        expect(ids(await cheese.find({ price: { $gt: 9, $lt: 20 } }))).toEqual([1, 3]);
        expect(ids(await cheese.find({ name: { $regex: "^brie", $options: "i" } }))).toEqual([1, 3]);
        expect(ids(await cheese.find({ name: /^BRIE/i }))).toEqual([1, 3]);
        expect(ids(await cheese.find({ name: /^brie/ }))).toEqual([3]);
      });

      it("filters on nested fields and on members of arrays of objects", async () => {
        expect(ids(await cheese.find({ "category.name": "Hard" }))).toEqual([2, 4]);
        expect(ids(await cheese.find({ "tags.name": "Cow" }))).toEqual([1, 4]);
        expect(ids(await cheese.find({ "tags.name": { $in: ["Dutch", "Sheep"] } }))).toEqual([4, 5]);
        expect(ids(await cheese.find({ tags: { $size: 0 } }))).toEqual([3]);
      });

      it("combines conditions with $or and $and", async () => {
        expect(
          ids(await cheese.find({ $or: [{ status: "discontinued" }, { price: { $gte: 20 } }] })),
        ).toEqual([2, 3, 5]);
        expect(ids(await cheese.find({ $and: [{ "tags.name": "French" }, { price: { $lt: 15 } }] }))).toEqual(
          [1],
        );
      });

      it("rejects an unknown operator instead of ignoring it", async () => {
        await expect(cheese.find({ price: { $near: 3 } })).rejects.toThrow();
      });

      it("sorts on several keys, breaking remaining ties by _id", async () => {
        expect(ids(await cheese.find({}, { sort: { price: -1, name: 1 } }))).toEqual([2, 5, 1, 3, 4]);
        expect(ids(await cheese.find({}, { sort: { price: 1 } }))).toEqual([4, 1, 3, 2, 5]);
        expect(ids(await cheese.find({}, { sort: { price: -1 } }))).toEqual([2, 5, 1, 3, 4]);
        expect(ids(await cheese.find({}, { sort: { "category.name": 1, price: -1 } }))).toEqual([
          5, 2, 4, 1, 3,
        ]);
        expect(ids(await cheese.find({}, { sort: { status: 1, _id: -1 } }))).toEqual([4, 2, 1, 3, 5]);
      });

      it("returns unsorted finds in _id order", async () => {
        expect(ids(await cheese.find({}))).toEqual([1, 2, 3, 4, 5]);
      });

      it("pages with skip and limit; a limit of 0 means no limit", async () => {
        const sort = { price: 1 } as const;
        expect(ids(await cheese.find({}, { sort, skip: 1, limit: 2 }))).toEqual([1, 3]);
        const pages = [0, 2, 4].map((skip) => cheese.find({}, { sort, skip, limit: 2 }));
        expect((await Promise.all(pages)).flatMap(ids)).toEqual([4, 1, 3, 2, 5]);
        expect(ids(await cheese.find({ status: "available" }, { limit: 0 }))).toEqual([1, 2, 4]);
        expect(await cheese.find({}, { skip: 5 })).toEqual([]);
      });

      it("read-only finds answer what findOne and find answer", async () => {
        expect(await cheese.findOneReadOnly({ _id: 4 })).toEqual({ ...cheeses[3], _revision: 1 });
        expect(await cheese.findOneReadOnly({ name: "Comté" })).toMatchObject({ _id: 2 });
        expect(await cheese.findOneReadOnly({ _id: 9 })).toBeNull();
        const queries: [Filter, FindOptions, number[]][] = [
          [{}, {}, [1, 2, 3, 4, 5]],
          [
            { status: { $in: ["available", "out_of_stock"] } },
            { sort: { price: -1, name: 1 } },
            [2, 5, 1, 4],
          ],
          [{ "tags.name": "French" }, { sort: { price: 1 }, skip: 1, limit: 2 }, [2, 5]],
          [{ price: { $gt: 100 } }, {}, []],
        ];
        for (const [filter, options, wanted] of queries) {
          const found = await cheese.findReadOnly(filter, options);
          expect(ids(found)).toEqual(wanted);
          expect(found).toEqual(await cheese.find(filter, options));
        }
      });

      it("counts matching documents", async () => {
        expect(await cheese.count()).toBe(5);
        expect(await cheese.count({ status: "available" })).toBe(3);
        expect(await cheese.count({ "tags.name": "French", price: { $gt: 15 } })).toBe(2);
        expect(await cheese.count({ status: "sold" })).toBe(0);
      });

      it("counts by the values of a field, missing values under null", async () => {
        expect(await cheese.countBy("status")).toEqual({ available: 3, discontinued: 1, out_of_stock: 1 });
        expect(await cheese.countBy("category.name", { price: { $gt: 10 } })).toEqual({
          Soft: 2,
          Hard: 1,
          Blue: 1,
        });
        expect(await cheese.countBy("status", { price: { $gt: 100 } })).toEqual({});
        await cheese.upsert(6, 1, { $set: { name: "Mystery" } });
        expect(await cheese.countBy("status", { price: { $not: { $gt: 10 } } })).toEqual({
          available: 1,
          null: 1,
        });
      });
    });

    describe("deletes", () => {
      beforeEach(seed);

      it("deleteOne without a revision deletes whatever revision is stored", async () => {
        expect(await cheese.deleteOne(2)).toBe(true);
        expect(await cheese.findOne({ _id: 2 })).toBeNull();
        expect(await cheese.deleteOne(2)).toBe(false);
        expect(await cheese.count()).toBe(4);
      });

      it("deleteOne with a revision is guarded like upsert", async () => {
        await cheese.upsert(2, 4, { $set: { status: "discontinued" } });
        expect(await cheese.deleteOne(2, 4)).toBe(false);
        expect(await cheese.deleteOne(2, 3)).toBe(false);
        expect(await cheese.findOne({ _id: 2 })).toMatchObject({ _revision: 4 });
        expect(await cheese.deleteOne(2, 5)).toBe(true);
        expect(await cheese.findOne({ _id: 2 })).toBeNull();
        expect(await cheese.deleteOne(99, 1)).toBe(false);
      });

      it("a delete with a revision keeps a tombstone: an older event replayed later cannot bring the document back", async () => {
        await cheese.upsert(2, 4, { $set: { status: "discontinued" } });
        expect(await cheese.deleteOne(2, 6)).toBe(true);
        expect(await cheese.upsert(2, 5, { $set: { status: "available" } })).toBe(false);
        expect(await cheese.findOne({ _id: 2 })).toBeNull();
        expect(await cheese.count()).toBe(4);
        expect(ids(await cheese.find({}))).not.toContain(2);
        expect(Object.values(await cheese.countBy("status")).reduce((a, b) => a + b, 0)).toBe(4);

        expect(await cheese.upsert(2, 7, { $set: { name: "Reborn" } })).toBe(true);
        const reborn = await cheese.findOne({ _id: 2 });
        expect(reborn).toMatchObject({ _id: 2, name: "Reborn", _revision: 7 });
        expect(reborn).not.toHaveProperty("status");
        expect(reborn).not.toHaveProperty("_deleted");
      });

      it("deleteOne over a tombstone answers false, whatever the revision, and keeps the newest revision", async () => {
        await cheese.upsert(2, 4, { $set: { status: "discontinued" } });
        expect(await cheese.deleteOne(2, 6)).toBe(true);
        // Nothing live is there any more: a newer or older delete finds nothing to delete.
        expect(await cheese.deleteOne(2, 8)).toBe(false);
        expect(await cheese.deleteOne(2, 7)).toBe(false);
        expect(await cheese.deleteOne(2)).toBe(false);
        // The newer tombstone holds: revision 7 cannot bring the document back, 9 can.
        expect(await cheese.upsert(2, 7, { $set: { name: "Too old" } })).toBe(false);
        expect(await cheese.findOne({ _id: 2 })).toBeNull();
        expect(await cheese.upsert(2, 9, { $set: { name: "Reborn" } })).toBe(true);
        expect(await cheese.findOne({ _id: 2 })).toMatchObject({ name: "Reborn", _revision: 9 });
        // A delete with a revision of a document never seen answers false too.
        expect(await cheese.deleteOne(77, 3)).toBe(false);
        expect(await cheese.deleteOne(77, 5)).toBe(false);
      });
    });

    it("returns copies: mutating a result or an update's values leaves the store unchanged", async () => {
      const tags = [french];
      await cheese.upsert(1, 1, { $set: { name: "Brie", tags, category: { id: 1, name: "Soft" } } });
      tags.push(cow);
      const found = (await cheese.findOne({ _id: 1 }))!;
      found.name = "Changed";
      found.tags.push(cow);
      found.category.name = "Changed";
      const [listed] = await cheese.find({});
      listed!.tags.length = 0;
      expect(await cheese.findOne({ _id: 1 })).toEqual({
        _id: 1,
        name: "Brie",
        tags: [french],
        category: { id: 1, name: "Soft" },
        _revision: 1,
      });
    });

    it("read-only finds: what they returned stays as it was read, whatever is written after", async () => {
      await cheese.upsert(1, 1, {
        $set: { name: "Brie", tags: [french], category: { id: 1, name: "Soft" } },
      });
      const first = { _id: 1, name: "Brie", tags: [french], category: { id: 1, name: "Soft" }, _revision: 1 };
      const found = await cheese.findOneReadOnly({ _id: 1 });
      const [listed] = await cheese.findReadOnly({});
      // Through mingo ($push, a dotted $set), then by top-level $set, then a tombstone.
      await cheese.upsert(1, 2, { $push: { tags: cow }, $set: { "category.name": "Changed" } });
      const second = await cheese.findOneReadOnly({ _id: 1 });
      await cheese.upsert(1, 3, { $set: { name: "Brie noir" } });
      const [third] = await cheese.findReadOnly({ name: "Brie noir" });
      await cheese.deleteOne(1, 4);

      expect(found).toEqual(first);
      expect(listed).toEqual(first);
      expect(second).toEqual({
        ...first,
        tags: [french, cow],
        category: { id: 1, name: "Changed" },
        _revision: 2,
      });
      expect(third).toEqual({ ...second, name: "Brie noir", _revision: 3 });
      expect(await cheese.findOneReadOnly({ _id: 1 })).toBeNull();
      expect(await cheese.findReadOnly({})).toEqual([]);
    });

    describe("projection versions", () => {
      const definition = (version: number) => ({
        name: "shop",
        version,
        collections: [
          {
            name: "items",
            indexes: [{ keys: { price: 1 as const, _id: 1 as const } }],
            queries: [{ name: "items by price", filter: {}, sort: { price: 1 as const } }],
          },
        ],
      });

      it("a projection whose version changed starts on empty collections and its own checkpoint", async () => {
        const v1 = await store.defineProjection(definition(1));
        await store.collection("items").upsert(1, 1, { $set: { price: 5, shape: "old" } });
        await store.setCheckpoint(v1, 42);

        // Defined again at the same version (a restart): the same documents and checkpoint.
        expect(await store.defineProjection(definition(1))).toBe(v1);
        expect(await store.collection("items").find({}, { sort: { price: 1 } })).toEqual([
          { _id: 1, price: 5, shape: "old", _revision: 1 },
        ]);
        expect(await store.getCheckpoint(v1)).toBe(42);

        // A new version: rebuilt from nothing, beside the old one.
        const v2 = await store.defineProjection(definition(2));
        expect(v2).not.toBe(v1);
        expect(await store.getCheckpoint(v2)).toBeUndefined();
        expect(await store.collection("items").find({}, { sort: { price: 1 } })).toEqual([]);
        await store.collection("items").upsert(1, 1, { $set: { price: 5, shape: "new" } });
        // The previous version stays for replicas still on it...
        expect(await store.getCheckpoint(v1)).toBe(42);
        // ...until a later version drops it.
        const v3 = await store.defineProjection(definition(3));
        expect(await store.getCheckpoint(v1)).toBeUndefined();
        expect(await store.defineProjection(definition(1))).toBe(v1);
        expect(await store.collection("items").find({}, { sort: { price: 1 } })).toEqual([]);
        expect(v3).not.toBe(v2);
      });
    });

    describe("generations: a rebuild beside the live collections", () => {
      const definition = (version: number) => ({
        name: "shop",
        version,
        collections: [
          {
            name: "items",
            indexes: [{ keys: { price: 1 as const, _id: 1 as const } }],
            queries: [{ name: "items by price", filter: {}, sort: { price: 1 as const } }],
          },
        ],
      });
      const items = () => store.collection("items").find({}, { sort: { price: 1 } });

      it("a rebuild on request: the old generation answers until the new one is served, then it is dropped", async () => {
        const key = await store.defineProjection(definition(1));
        await store.collection("items").upsert(1, 1, { $set: { price: 5, shape: "old" } });
        await store.setCheckpoint(key, 10);
        const live = await store.liveGeneration(definition(1), 1);
        expect(live).toMatchObject({ version: 1, generation: 0, key });

        const next = await store.newGeneration(definition(1), { fresh: true });
        expect(next).toMatchObject({ version: 1, generation: 1 });
        expect(next.key).not.toBe(key);
        expect(await next.collection("items").find({}, { sort: { price: 1 } })).toEqual([]);
        await next.collection("items").upsert(1, 1, { $set: { price: 6, shape: "new" } });
        await store.setCheckpoint(next.key, 10);
        // Until it is served, reads reach the old generation, and it stays the live one.
        expect(await items()).toEqual([{ _id: 1, price: 5, shape: "old", _revision: 1 }]);
        expect((await store.liveGeneration(definition(1), 1))?.generation).toBe(0);

        await store.serve(definition(1), next);
        expect(await items()).toEqual([{ _id: 1, price: 6, shape: "new", _revision: 1 }]);
        expect((await store.liveGeneration(definition(1), 1))?.key).toBe(next.key);
        await store.dropGeneration(definition(1), live!);
        expect(await live!.collection("items").find({}, { sort: { price: 1 } })).toEqual([]);
        expect(await store.getCheckpoint(key)).toBeUndefined();
        expect(await store.getCheckpoint(next.key)).toBe(10);

        // Defined again (a restart): the served generation is the one reads reach.
        expect(await store.defineProjection(definition(1))).toBe(next.key);
        expect(await items()).toEqual([{ _id: 1, price: 6, shape: "new", _revision: 1 }]);
        // The next rebuild on request starts from nothing, after the live one.
        const third = await store.newGeneration(definition(1), { fresh: true });
        expect(third.generation).toBe(2);
        await third.collection("items").upsert(9, 1, { $set: { price: 1 } });
        expect(
          await (await store.newGeneration(definition(1), { fresh: true }))
            .collection("items")
            .find({}, { sort: { price: 1 } }),
        ).toEqual([]);
      });

      it("a new version is built beside the previous one, which answers meanwhile", async () => {
        const v1 = await store.defineProjection(definition(1));
        await store.collection("items").upsert(1, 1, { $set: { price: 5, shape: "old" } });
        await store.setCheckpoint(v1, 10);

        await store.defineProjection(definition(2));
        expect(await store.liveGeneration(definition(2), 2)).toBeUndefined();
        const previous = await store.liveGeneration(definition(2), 1);
        expect(previous?.key).toBe(v1);
        await store.serve(definition(2), previous!);
        expect(await items()).toEqual([{ _id: 1, price: 5, shape: "old", _revision: 1 }]);

        const target = await store.newGeneration(definition(2));
        expect(target).toMatchObject({ version: 2, generation: 0 });
        await target.collection("items").upsert(1, 1, { $set: { price: 7, shape: "new" } });
        await store.setCheckpoint(target.key, 3);
        expect(await items()).toEqual([{ _id: 1, price: 5, shape: "old", _revision: 1 }]);
        // Interrupted half way (a restart): not taken for a finished build; the build resumes.
        expect(await store.defineProjection(definition(2))).toBe(target.key);
        expect(await store.liveGeneration(definition(2), 2)).toBeUndefined();
        const resumed = await store.newGeneration(definition(2));
        expect(resumed.key).toBe(target.key);
        expect(await store.getCheckpoint(resumed.key)).toBe(3);

        await store.serve(definition(2), resumed);
        expect(await items()).toEqual([{ _id: 1, price: 7, shape: "new", _revision: 1 }]);
        expect((await store.liveGeneration(definition(2), 2))?.key).toBe(target.key);
        await store.dropGeneration(definition(2), previous!);
        expect(await previous!.collection("items").find({}, { sort: { price: 1 } })).toEqual([]);
        expect(await store.getCheckpoint(v1)).toBeUndefined();
      });
    });

    describe("indexed collections", () => {
      const shop: ProjectionDefinition = {
        name: "shop",
        version: 1,
        collections: [
          {
            name: "items",
            indexes: [{ keys: { price: 1 as const, _id: 1 as const } }, { keys: { status: 1 as const } }],
            queries: [
              {
                name: "a page by price after a cursor",
                filter: {
                  status: { $in: ["a"] },
                  $or: [{ price: { $gt: 1 } }, { price: 1, _id: { $gt: 1 } }],
                },
                optional: ["status", "price", "_id"],
                sort: { price: 1 as const, _id: 1 as const },
              },
              { name: "count by status", filter: { status: { $in: ["a"] } }, optional: ["status"] },
              { name: "count per status", filter: {}, groupBy: "status", scans: "counts every item" },
            ],
          },
        ],
      };
      type Item = { _id: number; price: number; status: string };
      const expected = (items: Map<number, Item>, statuses: string[], way: 1 | -1) =>
        [...items.values()]
          .filter((item) => statuses.includes(item.status))
          .sort((a, b) => (a.price - b.price || a._id - b._id) * way)
          .map((item) => item._id);

      it("answers sorted, filtered pages and counts as documents move, appear and go", async () => {
        await store.defineProjection(shop);
        const items = store.collection<Item & Document>("items");
        const model = new Map<number, Item>();
        const statuses = ["a", "b", "c"];
        let revision = 1;
        // Prices repeat (ties broken by _id); then prices and statuses change, some items go.
        for (let id = 1; id <= 60; id++) {
          const item = { _id: id, price: (id * 7) % 11, status: statuses[id % 3]! };
          model.set(id, item);
          await items.upsert(id, revision, { $set: { price: item.price, status: item.status } });
        }
        revision++;
        for (let id = 1; id <= 60; id += 4) {
          const item = { _id: id, price: (id * 5) % 13, status: statuses[(id + 1) % 3]! };
          model.set(id, item);
          await items.upsert(id, revision, { $set: { price: item.price, status: item.status } });
        }
        revision++;
        for (let id = 3; id <= 60; id += 9) {
          model.delete(id);
          await items.deleteOne(id, revision);
        }
        revision++;
        for (let id = 2; id <= 60; id += 10) {
          const before = model.get(id);
          if (!before) continue;
          model.set(id, { ...before, price: 100 + id });
          // Another update operator than $set moves a document too.
          await items.upsert(id, revision, { $inc: { price: 100 + id - before.price } });
        }

        for (const way of [1, -1] as const) {
          for (const wanted of [["a"], ["b", "c"]]) {
            const all = expected(model, wanted, way);
            const page = await items.find(
              { status: { $in: wanted } },
              { sort: { price: way, _id: way }, skip: 3, limit: 5 },
            );
            expect(page.map((item) => item._id)).toEqual(all.slice(3, 8));
            expect(
              await items.findReadOnly(
                { status: { $in: wanted } },
                { sort: { price: way, _id: way }, skip: 3, limit: 5 },
              ),
            ).toEqual(page);
            expect(await items.count({ status: { $in: wanted } })).toBe(all.length);
          }
        }
        // A page after a cursor: the keyset filter the lists use.
        const all = expected(model, ["a", "b", "c"], 1);
        const cursor = model.get(all[9]!)!;
        const after = await items.find(
          { $or: [{ price: { $gt: cursor.price } }, { price: cursor.price, _id: { $gt: cursor._id } }] },
          { sort: { price: 1, _id: 1 }, limit: 4 },
        );
        expect(after.map((item) => item._id)).toEqual(all.slice(10, 14));
        // Every cursor position, both ways, with and without a status filter, to the last page.
        for (const way of [1, -1] as const) {
          const beyond = way === 1 ? "$gt" : "$lt";
          for (const wanted of [["a", "b", "c"], ["b"]]) {
            const order = expected(model, wanted, way);
            for (let at = 0; at < order.length; at++) {
              const last = model.get(order[at]!)!;
              const next = await items.find(
                {
                  status: { $in: wanted },
                  $or: [
                    { price: { [beyond]: last.price } },
                    { price: last.price, _id: { [beyond]: last._id } },
                  ],
                },
                { sort: { price: way, _id: way }, limit: 3 },
              );
              expect(next.map((item) => item._id)).toEqual(order.slice(at + 1, at + 4));
            }
          }
        }
        expect(await items.count({ status: "a" })).toBe(expected(model, ["a"], 1).length);
        expect(await items.count({ status: { $in: ["c", "a", "c", "zz"] } })).toBe(
          expected(model, ["a", "c"], 1).length,
        );
        expect(await items.count()).toBe(model.size);
        const perStatus: Record<string, number> = {};
        for (const item of model.values()) perStatus[item.status] = (perStatus[item.status] ?? 0) + 1;
        expect(await items.countBy("status")).toEqual(perStatus);
      });
    });

    it("stores checkpoints per projection", async () => {
      expect(await store.getCheckpoint("catalogue")).toBeUndefined();
      await store.setCheckpoint("catalogue", 5);
      await store.setCheckpoint("catalogue", 7);
      await store.setCheckpoint("orders", 0);
      expect(await store.getCheckpoint("catalogue")).toBe(7);
      expect(await store.getCheckpoint("orders")).toBe(0);
    });

    it("never moves a checkpoint back: two replicas racing, the lagging one's writes leave the leader's", async () => {
      // Replica A is ahead (positions 100..190), replica B lags (0..90) and writes last.
      const ahead = Array.from({ length: 10 }, (_, i) => 100 + i * 10);
      const lagging = Array.from({ length: 10 }, (_, i) => i * 10);
      await Promise.all([
        (async () => {
          for (const position of ahead) await store.setCheckpoint("raced", position);
        })(),
        (async () => {
          for (const position of lagging) await store.setCheckpoint("raced", position);
        })(),
      ]);
      await store.setCheckpoint("raced", 50);
      expect(await store.getCheckpoint("raced")).toBe(190);
      await store.setCheckpoint("raced", 200);
      expect(await store.getCheckpoint("raced")).toBe(200);
    });

    it("keeps collections independent, and the same name gives the same collection", async () => {
      await store.collection("a").upsert(1, 1, { $set: { in: "a" } });
      await store.collection("b").upsert(1, 7, { $set: { in: "b" } });
      expect(await store.collection("a").find({})).toEqual([{ _id: 1, in: "a", _revision: 1 }]);
      expect(await store.collection("b").find({})).toEqual([{ _id: 1, in: "b", _revision: 7 }]);
      expect(await store.collection("c").count()).toBe(0);
    });

    it("answers ping", async () => {
      expect(await store.ping()).toBe(true);
    });
  });
}
