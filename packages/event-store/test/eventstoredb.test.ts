import { containerImageUnavailableReason, freePort } from "@cheese/testing";
import { GenericContainer, Wait } from "testcontainers";
import { describe, expect, it } from "vitest";
import { createEventStoreDbStore } from "../src/eventstoredb.ts";
import { type EventStoreFixture, eventStoreContract, waitFor } from "./contract.ts";

const IMAGE = "eventstore/eventstore:24.10";
const HTTP_PORT = 2113;

/** A throw-away single-node EventStoreDB, in memory and without TLS, with the settings compose uses. */
async function startEventStoreDb(): Promise<EventStoreFixture> {
  const container = await new GenericContainer(IMAGE)
    .withEnvironment({
      EVENTSTORE_INSECURE: "true",
      EVENTSTORE_RUN_PROJECTIONS: "All",
      EVENTSTORE_START_STANDARD_PROJECTIONS: "true",
      EVENTSTORE_MEM_DB: "true",
      EVENTSTORE_CLUSTER_SIZE: "1",
    })
    .withExposedPorts(HTTP_PORT)
    .withWaitStrategy(Wait.forHttp("/health/live", HTTP_PORT).forStatusCode(204))
    .withStartupTimeout(120_000)
    .start();
  const store = createEventStoreDbStore({
    connectionString: `esdb://${container.getHost()}:${container.getMappedPort(HTTP_PORT)}?tls=false`,
  });
  return {
    store,
    async cleanup() {
      await store.close();
      await container.stop();
    },
    endSubscriptions:
      "a real EventStoreDB cannot be told to end a subscription (the stand-in suite covers it)",
  };
}

const skipReason = await containerImageUnavailableReason(IMAGE);

if (skipReason) {
  console.warn(`EventStoreDB contract suite skipped: ${skipReason}`);
  describe.skip(`EventStoreDB adapter contract (skipped: ${skipReason})`, () => {
    eventStoreContract("EventStoreDB adapter contract", startEventStoreDb);
  });
} else {
  eventStoreContract("EventStoreDB adapter contract", startEventStoreDb);
}

// Runs without Docker: the adapter must report an unreachable server instead of hanging or throwing.
describe("EventStoreDB adapter without a reachable server", () => {
  it("answers ping with false, reports subscription failures through onError, and closes", async () => {
    const store = createEventStoreDbStore({
      connectionString: `esdb://127.0.0.1:${await freePort()}?tls=false`,
    });
    const errors: Error[] = [];
    try {
      expect(await store.ping()).toBe(false);
      const subscription = store.subscribe({
        categories: ["cheese"],
        handler: async () => {},
        onError: (error) => errors.push(error),
      });
      await waitFor(() => errors.length > 0);
      expect(errors[0]!.message).toMatch(/UNAVAILABLE|ECONNREFUSED/);
      await subscription.close();
      expect(store.openReads()).toBe(0);
    } finally {
      await store.close();
    }
  });
});
