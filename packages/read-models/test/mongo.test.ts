import { randomUUID } from "node:crypto";
import { containerImageUnavailableReason, freePort, startTcpRelay } from "@cheese/testing";
import { MongoClient } from "mongodb";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMongoReadModels } from "../src/mongo.ts";
import { queryPlanProblems } from "../src/plans.ts";
import { type CollectionDefinition, ReadModelsUnavailableError } from "../src/port.ts";
import { readModelContract } from "./contract.ts";

// Runs everywhere: no MongoDB is needed to see the driver's failures named as the port's.
describe("MongoDB read models, with no MongoDB to reach", () => {
  it("a closed port: opening fails within its deadline as unavailable, not the driver's 30 s", async () => {
    const started = Date.now();
    await expect(
      createMongoReadModels({
        url: `mongodb://127.0.0.1:${await freePort()}/?directConnection=true`,
        timeoutMs: 500,
      }),
    ).rejects.toBeInstanceOf(ReadModelsUnavailableError);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a server that accepts connections and never answers: the same", async () => {
    const silent = await startTcpRelay(await freePort());
    silent.hang();
    try {
      await expect(
        createMongoReadModels({
          url: `mongodb://127.0.0.1:${silent.port}/?directConnection=true`,
          timeoutMs: 500,
        }),
      ).rejects.toBeInstanceOf(ReadModelsUnavailableError);
    } finally {
      await silent.close();
    }
  });
});

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

    it("behind a relay that stops forwarding: each operation fails within its deadline as unavailable, then recovers", async () => {
      const front = await startTcpRelay(container.getMappedPort(27017));
      const database = `outage_${randomUUID().replaceAll("-", "")}`;
      const store = await createMongoReadModels({
        url: `mongodb://127.0.0.1:${front.port}/?directConnection=true`,
        database,
        timeoutMs: 1_000,
      });
      try {
        const cheeses = store.collection("cheeses");
        await cheeses.upsert(1, 0, { $set: { name: "Brie" } });
        front.hang();
        const started = Date.now();
        const attempts = [
          () => cheeses.findOne({ _id: 1 }),
          () => cheeses.find({}),
          () => cheeses.count(),
          () => cheeses.upsert(2, 0, { $set: { name: "Comté" } }),
          () => cheeses.deleteOne(1, 1),
          () => store.getCheckpoint("outage"),
          () => store.setCheckpoint("outage", 5),
        ];
        for (const attempt of attempts)
          await expect(attempt()).rejects.toBeInstanceOf(ReadModelsUnavailableError);
        // Each within its deadline (timeoutMS), not the driver's 30 s of server selection.
        expect(Date.now() - started).toBeLessThan(attempts.length * 3_000);
        front.resume();
        await expect
          .poll(() => cheeses.findOne({ _id: 1 }).catch(() => null))
          .toMatchObject({ name: "Brie" });
        expect(await cheeses.upsert(2, 0, { $set: { name: "Comté" } })).toBe(true);
      } finally {
        await store.close();
        await front.close();
      }
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

    it("a generation served by one replica is the one every other replica and the next start reach", async () => {
      const database = `generations_${randomUUID().replaceAll("-", "")}`;
      const definition = {
        name: "shop",
        version: 1,
        collections: [{ name: "items", indexes: [{ keys: { price: 1 as const } }], queries: [] }],
      };
      const first = await createMongoReadModels({ url, database });
      const other = await createMongoReadModels({ url, database });
      try {
        const key = await first.defineProjection(definition);
        await other.defineProjection(definition);
        await first.collection("items").upsert(1, 1, { $set: { price: 5 } });
        await first.setCheckpoint(key, 10);
        const next = await first.newGeneration(definition, { fresh: true });
        await next.collection("items").upsert(1, 1, { $set: { price: 6 } });
        await first.setCheckpoint(next.key, 10);
        await first.serve(definition, next);
        // The other replica still reads what it served, until it looks for the live generation.
        expect(await other.collection("items").findOne({ _id: 1 })).toMatchObject({ price: 5 });
        expect((await other.liveGeneration(definition, 1))?.key).toBe(next.key);
        await first.close();
        const restarted = await createMongoReadModels({ url, database });
        expect(await restarted.defineProjection(definition)).toBe(next.key);
        expect(await restarted.collection("items").findOne({ _id: 1 })).toMatchObject({ price: 6 });
        // Its indexes were made with it.
        const client = await new MongoClient(url).connect();
        const indexes = await client.db(database).collection("items_v1_g1").indexes();
        expect(indexes.map((index) => index.key)).toEqual([{ _id: 1 }, { price: 1 }]);
        await client.db(database).dropDatabase();
        await client.close();
        await restarted.close();
      } finally {
        await other.close();
        await first.close().catch(() => {});
      }
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
