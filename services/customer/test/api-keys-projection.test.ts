import type { RecordedEvent } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { describe, expect, it } from "vitest";
import {
  API_KEYS,
  API_KEYS_VERSION,
  type ApiKeyDocument,
  apiKeysCollection,
  projectApiKeys,
} from "../src/projections/api-keys.ts";

const expiresAt = "2027-01-01T00:00:00.000Z";
const recorded = (revision: number, type: string, data: unknown): RecordedEvent => ({
  id: `event-${revision}`,
  streamName: "customer-7",
  type,
  data,
  metadata: {},
  version: 1,
  revision,
  position: 100 + revision,
  createdAt: "2026-01-01T00:00:00.000Z",
});
const issued = (revision: number, keyId: number) =>
  recorded(revision, "ApiKeyIssued", {
    customerId: 7,
    keyId,
    keyHash: `hash-${keyId}`,
    prefix: "ck_",
    createdAt: "2026-01-01T00:00:00.000Z",
    expiresAt,
  });

describe("the api_keys projection, two replicas sharing its read models", () => {
  it("a replica replaying a deleted customer's older events does not bring its keys back", async () => {
    const readModels = createMemoryReadModels();
    await readModels.defineProjection({
      name: API_KEYS,
      version: API_KEYS_VERSION,
      collections: [apiKeysCollection],
    });
    const apply = projectApiKeys(async () => {});
    const events = [
      recorded(0, "CustomerRegistered", { customerId: 7 }),
      issued(1, 1),
      issued(2, 2),
      recorded(3, "ApiKeyRevoked", { customerId: 7, keyId: 2 }),
      recorded(4, "CustomerDeleted", {
        customerId: 7,
        username: "gone",
        apiKeyIds: [1],
        deletedAt: expiresAt,
      }),
    ];
    // The replica ahead applies everything, the deletion included.
    for (const event of events) await apply(event, readModels);
    const keys = readModels.collection<ApiKeyDocument>(API_KEYS);
    const presented = async () => [
      await keys.findOne({ keyHash: "hash-1" }),
      await keys.findOne({ keyHash: "hash-2" }),
    ];
    expect(await presented()).toEqual([null, null]);
    // The replica behind replays the same events from the start into the same collections.
    for (const event of events.slice(0, 4)) {
      await apply(event, readModels);
      expect(await presented()).toEqual([null, null]);
    }
  });
});

describe("the api_keys projection rebuilt beside the live read models", () => {
  it("completes a deletion it sees in the run reads reach, not in the rebuild beside it", async () => {
    const readModels = createMemoryReadModels();
    await readModels.defineProjection({
      name: API_KEYS,
      version: API_KEYS_VERSION,
      collections: [apiKeysCollection],
    });
    const completed: number[] = [];
    const apply = projectApiKeys(async (customerId) => {
      completed.push(customerId);
    });
    const deleted = recorded(2, "CustomerDeleted", {
      customerId: 7,
      username: "gone",
      apiKeyIds: [1],
      deletedAt: expiresAt,
    });
    await apply(issued(1, 1), readModels, { rebuilding: true });
    await apply(deleted, readModels, { rebuilding: true });
    expect(completed).toEqual([]);
    // The key is gone from the rebuilt read model all the same.
    expect(await readModels.collection<ApiKeyDocument>(API_KEYS).findOne({ keyHash: "hash-1" })).toBeNull();
    await apply(deleted, readModels, { rebuilding: false });
    expect(completed).toEqual([7]);
  });
});
