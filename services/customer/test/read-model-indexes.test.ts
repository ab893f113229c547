import { declarationProblems, queryPlanProblems } from "@cheese/read-models";
import { containerImageUnavailableReason, MONGO_IMAGE, startMongoContainer } from "@cheese/testing";
import { describe, expect, it } from "vitest";
import { apiKeysCollection } from "../src/projections/api-keys.ts";

// Every query the customer service runs on its read models is declared with them (the in-memory
// adapter refuses undeclared ones under test); here: each has an index, each index a query.
const collections = [apiKeysCollection];

it("every query on the customer read models has an index, and every index a query", () => {
  expect(collections.flatMap(declarationProblems)).toEqual([]);
});

const reason = await containerImageUnavailableReason(MONGO_IMAGE);
if (reason) console.warn(`customer query plans on MongoDB not checked: ${reason}`);

describe.skipIf(reason !== undefined)(
  `customer query plans on MongoDB${reason ? ` (skipped: ${reason})` : ""}`,
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
