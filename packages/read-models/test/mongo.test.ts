import { randomUUID } from "node:crypto";
import { dockerUnavailableReason } from "@cheese/testing";
import { MongoClient } from "mongodb";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMongoReadModels } from "../src/mongo.ts";
import { readModelContract } from "./contract.ts";

const skipReason = await dockerUnavailableReason();

if (skipReason) {
  console.warn(`MongoDB contract suite skipped: ${skipReason}`);
  describe.skip(`MongoDB read-model contract (skipped: ${skipReason})`, () => {
    it("needs a Docker engine", () => {});
  });
} else {
  describe("MongoDB read models", () => {
    let container: StartedTestContainer;
    let url: string;

    beforeAll(async () => {
      container = await new GenericContainer("mongo:7")
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
