import { Query } from "mingo";
import { expect, it } from "vitest";
import type { Document, Filter } from "../src/port.ts";
import { predicate } from "../src/predicate.ts";

// Values of several types, arrays among them, and missing fields: where MongoDB's meaning is subtle.
const values: unknown[] = [
  "a",
  "b",
  "B",
  "ab",
  "",
  0,
  1,
  2.5,
  -1,
  true,
  false,
  null,
  ["a", 2],
  [],
  ["b"],
  [1, 3],
];
const documents: Document[] = [];
for (let i = 0; i < 200; i++) {
  const document: Document = { _id: i };
  for (const [n, field] of ["x", "y"].entries()) {
    const pick = (i * (n + 3) + n * 7) % (values.length + 1);
    if (pick < values.length) document[field] = values[pick];
  }
  documents.push(document);
}

const operands = ["a", "b", 1, 2.5, true, 0];
const conditions: unknown[] = [
  ...operands,
  { $in: ["a", 1] },
  { $in: [true, "b", 3] },
  ...operands.flatMap((operand) =>
    typeof operand === "boolean"
      ? []
      : [{ $gt: operand }, { $gte: operand }, { $lt: operand }, { $lte: operand }],
  ),
  { $gt: 0, $lt: 3 },
  { $gte: "a", $lte: "b" },
];
const filters: Filter[] = [
  {},
  ...conditions.map((condition) => ({ x: condition })),
  ...conditions
    .slice(0, 12)
    .map((condition, i) => ({ x: condition, y: conditions[(i * 5) % conditions.length] })),
  { $or: [{ x: { $gt: "a" } }, { x: "a", _id: { $gt: 50 } }] },
  { $and: [{ y: { $in: ["a", 1] } }, { $or: [{ x: { $lt: 2 } }, { x: 2.5, _id: { $lt: 100 } }] }] },
];

it("answers every filter it compiles as mingo (MongoDB) does, arrays, types and missing fields included", () => {
  for (const filter of filters) {
    const query = new Query(filter);
    const test = predicate(filter);
    const expected = documents.filter((document) => query.test(document)).map((document) => document._id);
    expect(
      documents.filter(test).map((document) => document._id),
      JSON.stringify(filter),
    ).toEqual(expected);
  }
});

it("leaves other filters to mingo", () => {
  const test = predicate({ x: { $regex: "^a" }, "y.z": { $exists: false } });
  expect(documents.filter(test).length).toBe(
    documents.filter((document) => typeof document.x === "string" && document.x.startsWith("a")).length +
      documents.filter(
        (document) =>
          Array.isArray(document.x) && document.x.some((v) => typeof v === "string" && v.startsWith("a")),
      ).length,
  );
});
