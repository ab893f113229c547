import { describe, expect, it } from "vitest";
import { declarationProblems, UndeclaredQueryError } from "../src/declarations.ts";
import { createMemoryReadModels } from "../src/memory.ts";
import type { CollectionDefinition, Document, ProjectionDefinition } from "../src/port.ts";
import { readModelContract } from "./contract.ts";

readModelContract("in-memory (mingo)", async () => ({
  store: createMemoryReadModels(),
  cleanup: async () => {},
}));

it("in-memory read models are not durable", () => {
  expect(createMemoryReadModels().durable).toBe(false);
});

describe("in-memory read-only finds hand out the stored documents", () => {
  interface Cheese extends Document {
    _id: number;
    name: string;
    tags: { name: string }[];
  }
  const seeded = async (options: { freezeDocuments?: boolean }) => {
    const cheeses = createMemoryReadModels(options).collection<Cheese>("cheeses");
    await cheeses.upsert(1, 1, { $set: { name: "Brie", tags: [{ name: "soft" }] } });
    return cheeses;
  };
  const brie = { _id: 1, name: "Brie", tags: [{ name: "soft" }], _revision: 1 };

  it("frozen under test: changing one throws, and the store keeps its document", async () => {
    const cheeses = await seeded({});
    const found = (await cheeses.findOneReadOnly({ _id: 1 }))!;
    const [listed] = await cheeses.findReadOnly({});
    expect(() => Object.assign(found, { name: "Changed" })).toThrow(TypeError);
    expect(() => (listed!.tags as { name: string }[]).push({ name: "changed" })).toThrow(TypeError);
    expect(() => Object.assign(listed!.tags[0]!, { name: "changed" })).toThrow(TypeError);
    expect(await cheeses.findOne({ _id: 1 })).toEqual(brie);
    // A copy from findOne is the caller's own.
    const copy = (await cheeses.findOne({ _id: 1 }))!;
    copy.tags.push({ name: "washed" });
    expect(await cheeses.findOneReadOnly({ _id: 1 })).toEqual(brie);
  });

  it("the same objects on every read, not copies, and typed read-only", async () => {
    const cheeses = await seeded({ freezeDocuments: false });
    const found = (await cheeses.findOneReadOnly({ _id: 1 }))!;
    expect(await cheeses.findOneReadOnly({ _id: 1 })).toBe(found);
    expect((await cheeses.findReadOnly({}, { sort: { name: 1 } }))[0]).toBe(found);
    expect(Object.isFrozen(found)).toBe(false);
    // Never run: what it shows is checked by `pnpm typecheck`, which fails if any line compiles.
    const mutations = () => {
      // @ts-expect-error a read-only document's fields cannot be assigned
      found.name = "Changed";
      // @ts-expect-error nor its arrays changed
      found.tags.push({ name: "washed" });
      // @ts-expect-error nor the objects in them
      found.tags[0]!.name = "washed";
    };
    void mutations;
  });
});

it("in-memory find sorts and pages 10,000 documents, ties in _id order", async () => {
  const docs = createMemoryReadModels().collection("cheeses");
  for (let id = 1; id <= 10_000; id++) {
    await docs.upsert(id, 1, { $set: { price: id % 97, status: id % 3 ? "available" : "sold" } });
  }
  const page = await docs.find({ status: "available" }, { sort: { price: -1 }, skip: 20, limit: 20 });
  expect(page.map((doc) => doc.price)).toEqual(Array(20).fill(96));
  const ids = page.map((doc) => doc._id as number);
  expect(ids).toEqual([...ids].sort((a, b) => a - b));
});

it("in-memory indexes over many blocks: cursor pages both ways, counts and counts per value", async () => {
  const store = createMemoryReadModels({ checkQueries: false });
  await store.defineProjection({
    name: "catalogue",
    version: 1,
    collections: [
      {
        name: "cheeses",
        // A descending first key too: the walk's bound must follow the index's direction.
        indexes: [{ keys: { at: -1, _id: -1 } }, { keys: { status: 1 } }],
        queries: [],
      },
    ],
  });
  const docs = store.collection("cheeses");
  const model = new Map<number, { at: string; status: string }>();
  for (let id = 1; id <= 3_000; id++) {
    // Ten documents per timestamp: cursors land inside runs of equal keys.
    const doc = {
      at: `2026-${String(Math.floor(((id * 37) % 3_000) / 10)).padStart(4, "0")}`,
      status: `s${id % 4}`,
    };
    model.set(id, doc);
    await docs.upsert(id, 1, { $set: doc });
  }
  for (let id = 5; id <= 3_000; id += 7) {
    model.delete(id);
    await docs.deleteOne(id, 2);
  }
  const statuses = ["s1", "s3"];
  for (const way of [1, -1] as const) {
    const order = [...model.entries()]
      .filter(([, doc]) => statuses.includes(doc.status))
      .sort(([a, x], [b, y]) => (x.at < y.at ? -1 : x.at > y.at ? 1 : a - b) * way)
      .map(([id]) => id);
    const beyond = way === 1 ? "$gt" : "$lt";
    for (let at = 0; at < order.length; at += 97) {
      const last = model.get(order[at]!)!;
      const page = await docs.find(
        {
          status: { $in: statuses },
          $or: [{ at: { [beyond]: last.at } }, { at: last.at, _id: { [beyond]: order[at] } }],
        },
        { sort: { at: way, _id: way }, limit: 20 },
      );
      expect(page.map((doc) => doc._id)).toEqual(order.slice(at + 1, at + 21));
    }
    expect(await docs.count({ status: { $in: statuses } })).toBe(order.length);
  }
  const perStatus: Record<string, number> = {};
  for (const doc of model.values()) perStatus[doc.status] = (perStatus[doc.status] ?? 0) + 1;
  expect(await docs.countBy("status")).toEqual(perStatus);
  expect(await docs.count()).toBe(model.size);
});

it("in-memory index kept per write when most documents come last (creations): pages in order across blocks", async () => {
  const store = createMemoryReadModels({ checkQueries: false });
  await store.defineProjection({
    name: "catalogue",
    version: 1,
    collections: [{ name: "cheeses", indexes: [{ keys: { createdAt: 1, _id: 1 } }], queries: [] }],
  });
  const docs = store.collection("cheeses");
  await docs.upsert(1, 1, { $set: { createdAt: "2026-00000" } });
  // The first read builds the index; every write after is one add to it.
  expect(await docs.find({}, { sort: { createdAt: 1, _id: 1 }, limit: 1 })).toHaveLength(1);
  const model = new Map<number, string>([[1, "2026-00000"]]);
  for (let id = 2; id <= 2_000; id++) {
    // Nine of ten after every document before them; every tenth back in time, among them.
    const createdAt = `2026-${String(id % 10 === 0 ? id - 1_000 : id).padStart(5, "0")}`;
    model.set(id, createdAt);
    await docs.upsert(id, 1, { $set: { createdAt } });
  }
  const order = [...model.entries()]
    .sort(([a, x], [b, y]) => (x < y ? -1 : x > y ? 1 : a - b))
    .map(([id]) => id);
  for (const way of [1, -1] as const) {
    const walked: number[] = [];
    for (let page = 0; page * 100 < order.length; page++)
      walked.push(
        ...(await docs.find({}, { sort: { createdAt: way, _id: way }, limit: 100, skip: page * 100 })).map(
          (doc) => doc._id as number,
        ),
      );
    expect(walked).toEqual(way === 1 ? order : [...order].reverse());
  }
});

describe("declared queries", () => {
  const cheeses: CollectionDefinition = {
    name: "cheeses",
    indexes: [{ keys: { sortName: 1, _id: 1 } }, { keys: { status: 1 } }],
    queries: [
      {
        name: "list by name",
        filter: {
          status: { $in: ["available"] },
          $or: [{ sortName: { $gt: "b" } }, { sortName: "b", _id: { $gt: 1 } }],
        },
        optional: ["status", "sortName", "_id"],
        sort: { sortName: 1 },
      },
      { name: "count per status", filter: {}, groupBy: "status", scans: "inventory counts every cheese" },
      { name: "by status", filter: { status: "available" } },
    ],
  };

  it("under check, a defined collection runs the declared queries and refuses any other", async () => {
    const store = createMemoryReadModels({ checkQueries: true });
    await store.defineProjection({ name: "catalogue", version: 1, collections: [cheeses] });
    const collection = store.collection("cheeses");
    await collection.upsert(1, 1, { $set: { sortName: "brie", status: "available" } });
    // Declared: optional fields left out, the sort reversed, lookups by _id.
    expect(await collection.find({}, { sort: { sortName: 1 } })).toHaveLength(1);
    expect(await collection.find({ status: { $in: ["sold"] } }, { sort: { sortName: -1, _id: -1 } })).toEqual(
      [],
    );
    expect(await collection.countBy("status")).toEqual({ available: 1 });
    expect(await collection.count({ status: "available" })).toBe(1);
    expect(await collection.findOne({ _id: 1 })).toMatchObject({ sortName: "brie" });
    // Not declared: another field, another sort, a required field missing.
    await expect(collection.find({ organic: true }, { sort: { sortName: 1 } })).rejects.toThrow(
      /not declared/,
    );
    await expect(collection.find({}, { sort: { createdAt: 1 } })).rejects.toThrow(/not declared/);
    // Ties broken the other way round cannot come from the same index walk.
    await expect(collection.find({}, { sort: { sortName: -1 } })).rejects.toThrow(/not declared/);
    await expect(collection.count({})).rejects.toThrow(UndeclaredQueryError);
  });

  it("without check (production), and on collections no projection defines, any query runs", async () => {
    const store = createMemoryReadModels({ checkQueries: false });
    await store.defineProjection({ name: "catalogue", version: 1, collections: [cheeses] });
    expect(await store.collection("cheeses").count({ organic: true })).toBe(0);
    expect(await createMemoryReadModels({ checkQueries: true }).collection("other").count({ x: 1 })).toBe(0);
  });

  it("finds a declared query without an index, and an index no query uses", () => {
    expect(declarationProblems(cheeses)).toEqual([]);
    expect(
      declarationProblems({
        name: "orders",
        indexes: [{ keys: { customerId: 1, createdAt: -1, _id: -1 } }, { keys: { total: 1 } }],
        queries: [
          { name: "a customer's orders", filter: { customerId: 7 }, sort: { createdAt: -1, _id: -1 } },
          { name: "every order, newest first", filter: {}, sort: { createdAt: -1, _id: -1 } },
          { name: "by status", filter: { status: "placed" } },
        ],
      }),
    ).toEqual([
      'orders: no index serves the query "every order, newest first"',
      'orders: no index serves the query "by status"',
      'orders: no declared query uses the index {"total":1}',
    ]);
  });
});

it("in-memory index walks start at the tightest bound on their key (the loosest of $or branches): pages as without the index", async () => {
  const indexed = createMemoryReadModels({ checkQueries: false });
  await indexed.defineProjection({
    name: "shop",
    version: 1,
    collections: [{ name: "items", indexes: [{ keys: { price: 1, _id: 1 } }], queries: [] }],
  });
  const plain = createMemoryReadModels({ checkQueries: false });
  for (const store of [indexed, plain]) {
    for (let id = 1; id <= 200; id++)
      await store.collection("items").upsert(id, 1, { $set: { price: id % 23 } });
  }
  const filters = [
    { price: { $gt: 5, $gte: 5 } },
    { price: { $gte: 5, $gt: 5 } },
    { price: { $gte: 5, $lt: 9 } },
    { price: { $gt: 4, $gte: 7 } },
    { price: { $lt: 12, $lte: 12 } },
    { price: { $gte: 3 }, $and: [{ price: { $gt: 3 } }, { price: { $gte: 2 } }] },
    { $or: [{ price: { $gte: 8 } }, { price: { $gt: 8 } }, { price: 10 }] },
    { $or: [{ price: { $gt: 8 } }, { price: { $gte: 8 } }] },
    { $or: [{ price: { $gt: 8 } }, { price: 8, _id: { $gt: 100 } }] },
    { $or: [{ price: { $gt: 8 } }, { _id: { $gt: 190 } }] },
    { price: { $gt: Number.NaN } },
    { price: { $gte: 4, $gt: Number.NaN } },
    { $or: [{ price: { $gte: 20 } }, { price: Number.NaN }] },
  ];
  for (const way of [1, -1] as const) {
    for (const filter of filters) {
      const answer = async (store: typeof plain) =>
        store
          .collection("items")
          .find(filter, { sort: { price: way, _id: way }, limit: 15 })
          .then((found) => found.map((doc) => doc._id));
      expect(await answer(indexed), JSON.stringify(filter)).toEqual(await answer(plain));
    }
  }
});

it("in-memory indexes of a collection filled from empty are built once, at the catch-up's end or the first read: pages and counts as without them, and kept per write after", async () => {
  const definition: ProjectionDefinition = {
    name: "shop",
    version: 1,
    collections: [
      { name: "items", indexes: [{ keys: { price: 1, _id: 1 } }, { keys: { status: 1 } }], queries: [] },
    ],
  };
  const plain = createMemoryReadModels({ checkQueries: false });
  const settled = createMemoryReadModels({ checkQueries: false });
  const lazy = createMemoryReadModels({ checkQueries: false });
  // As a projection's first build: a new generation, served before it fills.
  const generations = [];
  for (const store of [settled, lazy]) {
    await store.defineProjection(definition);
    const generation = await store.newGeneration(definition);
    await store.serve(definition, generation);
    generations.push(generation);
  }
  const stores = [plain, settled, lazy];
  // Inserts, moves (price and status change) and deletions while the indexes wait to be built.
  for (const store of stores) {
    const items = store.collection("items");
    for (let id = 1; id <= 1_500; id++)
      await items.upsert(id, 1, { $set: { price: id % 37, status: id % 3 === 0 ? "sold" : "available" } });
    for (let id = 1; id <= 1_500; id += 7) await items.upsert(id, 2, { $set: { price: 100 - (id % 11) } });
    for (let id = 2; id <= 1_500; id += 13) await items.deleteOne(id, 3);
  }
  await settled.caughtUp?.(definition, generations[0]!);
  const answers = async (store: typeof plain) => {
    const items = store.collection("items");
    return {
      firstPage: (await items.find({ price: { $gte: 20 } }, { sort: { price: 1, _id: 1 }, limit: 25 })).map(
        (doc) => doc._id,
      ),
      lastPage: (await items.find({}, { sort: { price: -1, _id: -1 }, limit: 25 })).map((doc) => doc._id),
      sold: await items.count({ status: "sold" }),
      perStatus: await items.countBy("status"),
    };
  };
  const expected = await answers(plain);
  expect(expected.firstPage).toHaveLength(25);
  expect(await answers(settled)).toEqual(expected);
  expect(await answers(lazy)).toEqual(expected);
  // Built: the writes after move the documents in the indexes one at a time.
  for (const store of stores) {
    const items = store.collection("items");
    for (let id = 3; id <= 1_500; id += 5)
      await items.upsert(id, 4, { $set: { price: id % 5, status: "sold" } });
    for (let id = 4; id <= 1_500; id += 9) await items.deleteOne(id, 5);
  }
  const after = await answers(plain);
  expect(after).not.toEqual(expected);
  expect(await answers(settled)).toEqual(after);
  expect(await answers(lazy)).toEqual(after);
});
