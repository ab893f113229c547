import { expect, it } from "vitest";
import { createMemoryReadModels } from "../src/memory.ts";
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
