import { randomUUID } from "node:crypto";
import { containerImageUnavailableReason } from "@cheese/testing";
import { MongoClient } from "mongodb";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMongoReadModels } from "../src/mongo.ts";
import { queryPlanProblems } from "../src/plans.ts";
import type { CollectionDefinition } from "../src/port.ts";
import { readModelContract } from "./contract.ts";

const IMAGE = "mongo:7";
const skipReason = await containerImageUnavailableReason(IMAGE);

if (skipReason) {
  console.warn(`MongoDB contract suite skipped: ${skipReason}`);
  describe.skip(`MongoDB read-model contract (skipped: ${skipReason})`, () => {
    it("needs MongoDB in a container", () => {});
  });
} else {
  describe("MongoDB read models", () => {
    let container: StartedTestContainer;
    let url: string;

    beforeAll(async () => {
      container = await new GenericContainer(IMAGE)
        .withExposedPorts(27017)
        .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
        .start();
      url = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/?directConnection=true`;
    });
    afterAll(async () => {
      await container?.stop();
    });

    // A database per test keeps tests apart without restarting the container.
    readModelContract("MongoDB", async () => {
      const database = `contract_${randomUUID().replaceAll("-", "")}`;
      const store = await createMongoReadModels({ url, database });
      return {
        store,
        async cleanup() {
          const client = await new MongoClient(url).connect();
          await client.db(database).dropDatabase();
          await client.close();
          await store.close();
        },
      };
    });

    it("creates the declared indexes at start, idempotently, and the query plans use them", async () => {
      const database = `indexes_${randomUUID().replaceAll("-", "")}`;
      const collections: CollectionDefinition[] = [
        {
          name: "orders",
          indexes: [{ keys: { customerId: 1, createdAt: -1, _id: -1 } }, { keys: { keyHash: 1 } }],
          queries: [
            {
              name: "a customer's orders, newest first",
              filter: { customerId: 7 },
              sort: { createdAt: -1, _id: -1 },
            },
            { name: "by key hash", filter: { keyHash: "abc" } },
          ],
        },
      ];
      for (let start = 0; start < 2; start++) {
        const store = await createMongoReadModels({ url, database });
        await store.defineProjection({ name: "orders", version: 1, collections });
        await store.close();
      }
      const client = await new MongoClient(url).connect();
      try {
        const indexes = await client.db(database).collection("orders_v1").indexes();
        expect(indexes.map((index) => index.key)).toEqual([
          { _id: 1 },
          { customerId: 1, createdAt: -1, _id: -1 },
          { keyHash: 1 },
        ]);
      } finally {
        await client.db(database).dropDatabase();
        await client.close();
      }
      expect(await queryPlanProblems(url, collections)).toEqual([]);
      // And the check can fail: without its index, the sorted query scans and sorts.
      expect(await queryPlanProblems(url, [{ ...collections[0]!, indexes: [] }])).not.toEqual([]);
    });

    it("is durable: documents and checkpoints survive closing and reopening", async () => {
      const database = `durable_${randomUUID().replaceAll("-", "")}`;
      const first = await createMongoReadModels({ url, database });
      expect(first.durable).toBe(true);
      await first.collection("cheeses").upsert(1, 3, { $set: { name: "Brie" } });
      await first.setCheckpoint("catalogue", 42);
      await first.close();

      const second = await createMongoReadModels({ url, database });
      expect(await second.collection("cheeses").findOne({ _id: 1 })).toEqual({
        _id: 1,
        name: "Brie",
        _revision: 3,
      });
      expect(await second.getCheckpoint("catalogue")).toBe(42);
      await second.close();
    });
  });
}
