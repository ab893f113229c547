import { dockerUnavailableReason, freePort } from "@cheese/testing";
import { GenericContainer, Wait } from "testcontainers";
import { describe, expect, it } from "vitest";
import { createEventStoreDbStore } from "../src/eventstoredb.ts";
import type { EventStore } from "../src/port.ts";
import { eventStoreContract, waitFor } from "./contract.ts";

const IMAGE = "eventstore/eventstore:24.10";
const HTTP_PORT = 2113;

/** A throw-away single-node EventStoreDB, in memory and without TLS. */
async function startEventStoreDb(): Promise<{ store: EventStore; cleanup(): Promise<void> }> {
  const container = await new GenericContainer(IMAGE)
    .withEnvironment({
      EVENTSTORE_INSECURE: "true",
      EVENTSTORE_RUN_PROJECTIONS: "All",
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
  };
}

const skipReason = await dockerUnavailableReason();

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
    } finally {
      await store.close();
    }
  });
});
