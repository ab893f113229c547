import { containerImageUnavailableReason, MONGO_IMAGE, tempDir } from "@cheese/testing";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import { afterAll, beforeAll, describe } from "vitest";
import { createFileKeyStore } from "../src/personal-data/key-store.ts";
import { createMongoKeyStore } from "../src/personal-data/mongo-key-store.ts";
import { keyStoreContract } from "./key-store-contract.ts";

keyStoreContract("files under DATA_DIR", async () => {
  const dir = tempDir("keys");
  return { store: createFileKeyStore(dir.path), cleanup: async () => dir.remove() };
});

const reason = await containerImageUnavailableReason(MONGO_IMAGE);
if (reason) console.warn(`MongoDB key store contract suite skipped: ${reason}`);

describe.skipIf(reason !== undefined)(`MongoDB key store${reason ? ` (skipped: ${reason})` : ""}`, () => {
  let mongo: StartedTestContainer;
  let database = 0;
  beforeAll(async () => {
    mongo = await new GenericContainer(MONGO_IMAGE)
      .withExposedPorts(27017)
      .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
      .start();
  }, 180_000);
  afterAll(async () => {
    await mongo?.stop();
  });
  keyStoreContract("MongoDB", async () => {
    const store = await createMongoKeyStore({
      url: `mongodb://${mongo.getHost()}:${mongo.getMappedPort(27017)}`,
      database: `keys_${++database}`,
    });
    return { store, cleanup: () => store.close() };
  });
});
