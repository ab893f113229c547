import { declarationProblems, queryPlanProblems } from "@cheese/read-models";
import { containerImageUnavailableReason, MONGO_IMAGE, startMongoContainer } from "@cheese/testing";
import { describe, expect, it } from "vitest";
import { ordersCollection } from "../src/projections/orders.ts";

// Every query the ordering service runs on its read models is declared with them (the in-memory
// adapter refuses undeclared ones under test); here: each has an index, each index a query.
const collections = [ordersCollection];

it("every query on the ordering read models has an index, and every index a query", () => {
  expect(collections.flatMap(declarationProblems)).toEqual([]);
});

const reason = await containerImageUnavailableReason(MONGO_IMAGE);
if (reason) console.warn(`ordering query plans on MongoDB not checked: ${reason}`);

describe.skipIf(reason !== undefined)(
  `ordering query plans on MongoDB${reason ? ` (skipped: ${reason})` : ""}`,
  () => {
    it("MongoDB runs each declared query on an index, and sorts through the index", async () => {
      const mongo = await startMongoContainer();
      try {
        expect(await queryPlanProblems(mongo.url, collections)).toEqual([]);
      } finally {
        await mongo.stop();
      }
    });
  },
);
