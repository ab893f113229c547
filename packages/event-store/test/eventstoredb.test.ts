import {
  containerImageUnavailableReason,
  freePort,
  KURRENTDB_IMAGE,
  startKurrentDbContainer,
} from "@cheese/testing";
import { describe, expect, it } from "vitest";
import { createEventStoreDbStore } from "../src/eventstoredb.ts";
import { type EventStoreFixture, eventStoreContract, waitFor } from "./contract.ts";

/** A throw-away single-node KurrentDB with compose's settings, reached by a `kurrentdb://` string. */
async function startEventStoreDb(): Promise<EventStoreFixture> {
  const kurrentdb = await startKurrentDbContainer();
  const store = createEventStoreDbStore({ connectionString: kurrentdb.connectionString });
  return {
    store,
    async cleanup() {
      await store.close();
      await kurrentdb.stop();
    },
    endSubscriptions: "a real KurrentDB cannot be told to end a subscription (the stand-in suite covers it)",
    atomicAppends:
      "the adapter appends stream after stream: @eventstore/db-client 6 has no multi-stream append",
  };
}

const skipReason = await containerImageUnavailableReason(KURRENTDB_IMAGE);

if (skipReason) {
  console.warn(`KurrentDB contract suite skipped: ${skipReason}`);
  describe.skip(`EventStoreDB adapter contract against KurrentDB (skipped: ${skipReason})`, () => {
    eventStoreContract("EventStoreDB adapter contract against KurrentDB", startEventStoreDb);
  });
} else {
  eventStoreContract("EventStoreDB adapter contract against KurrentDB", startEventStoreDb);
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
