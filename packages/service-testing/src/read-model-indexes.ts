import { type CollectionDefinition, declarationProblems, queryPlanProblems } from "@cheese/read-models";
import { containerImageUnavailableReason, MONGO_IMAGE, startMongoContainer } from "@cheese/testing";
import { describe, expect, it } from "vitest";

/**
 * The suite each service runs on the collections its projections declare (every query it runs
 * is declared there: the in-memory adapter refuses others under test): each query has an index
 * and each index a query (here); MongoDB plans each query on an index, without sorting in memory
 * (where Docker can have MongoDB; otherwise it says why it skips).
 */
export async function readModelIndexSuite(
  service: string,
  collections: CollectionDefinition[],
): Promise<void> {
  it(`every query on the ${service} read models has an index, and every index a query`, () => {
    expect(collections.flatMap(declarationProblems)).toEqual([]);
  });

  const reason = await containerImageUnavailableReason(MONGO_IMAGE);
  if (reason) console.warn(`${service} query plans on MongoDB not checked: ${reason}`);
  describe.skipIf(reason !== undefined)(
    `${service} query plans on MongoDB${reason ? ` (skipped: ${reason})` : ""}`,
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
}
