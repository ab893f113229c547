import { describe, expect, it } from "vitest";
import { declarationProblems, UndeclaredQueryError } from "../src/declarations.ts";
import { createMemoryReadModels } from "../src/memory.ts";
import type { CollectionDefinition } from "../src/port.ts";
import { readModelContract } from "./contract.ts";

readModelContract("in-memory (mingo)", async () => ({
  store: createMemoryReadModels(),
  cleanup: async () => {},
}));

it("in-memory read models are not durable", () => {
  expect(createMemoryReadModels().durable).toBe(false);
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
    await expect(collection.deleteMany({ status: "available", organic: true })).rejects.toThrow(
      /not declared/,
    );
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
