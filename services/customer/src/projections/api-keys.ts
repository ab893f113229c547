import type { RecordedEvent } from "@cheese/event-store";
import type { CollectionDefinition, Document, ReadModelStore } from "@cheese/read-models";
import type { ApplyContext } from "@cheese/service-kit";
import type { CustomerEvent } from "../domain/customer.ts";

/**
 * The `api_keys` read model: one document per customer API key, found by the hash of a presented
 * key, and by expiry for the warning scheduler. No personal data; a deleted customer's keys go.
 */
export interface ApiKeyDocument extends Document {
  _id: number;
  keyHash: string;
  customerId: number;
  expiresAt: string;
  /** expiresAt in epoch milliseconds, for range queries. */
  expiresAtMs: number;
  revoked: boolean;
  warned: boolean;
}

export const API_KEYS = "api_keys";

/**
 * Raise when projectApiKeys writes something else: the read model is rebuilt (architecture.md).
 * 2: a deleted customer's keys are tombstones at the deletion's revision, no longer removed.
 */
export const API_KEYS_VERSION = 2;

/** The `api_keys` collection's indexes and every query run on it. */
export const apiKeysCollection: CollectionDefinition = {
  name: API_KEYS,
  indexes: [
    { keys: { keyHash: 1 } },
    { keys: { customerId: 1 } },
    { keys: { revoked: 1, warned: 1, expiresAtMs: 1, _id: 1 } },
  ],
  queries: [
    { name: "every API-key request: the key by its hash (handlers/api-keys.ts)", filter: { keyHash: "h" } },
    { name: "CustomerDeleted: the customer's keys go (this projection)", filter: { customerId: 7 } },
    {
      name: "expiry warnings: every key neither revoked nor warned, at start (handlers/api-key-expiry.ts)",
      filter: { revoked: false, warned: false, expiresAtMs: { $lte: 0 } },
      sort: { expiresAtMs: 1, _id: 1 },
    },
  ],
};

/**
 * The `api_keys` projection's apply; `onCustomerDeleted` completes a deletion it sees (so one cut
 * short by a crash is finished on restart), in the run reads reach, not in a rebuild beside it.
 */
export function projectApiKeys(onCustomerDeleted: (customerId: number) => Promise<void>) {
  return async (event: RecordedEvent, readModels: ReadModelStore, context?: ApplyContext): Promise<void> => {
    const keys = readModels.collection<ApiKeyDocument>(API_KEYS);
    const domainEvent = { type: event.type, data: event.data } as CustomerEvent;
    switch (domainEvent.type) {
      case "ApiKeyIssued": {
        const { keyId, keyHash, customerId, expiresAt } = domainEvent.data;
        await keys.upsert(keyId, event.revision, {
          $set: {
            keyHash,
            customerId,
            expiresAt,
            expiresAtMs: Date.parse(expiresAt),
            revoked: false,
            warned: false,
          },
        });
        return;
      }
      case "ApiKeyRevoked":
        await keys.upsert(domainEvent.data.keyId, event.revision, { $set: { revoked: true } });
        return;
      case "ApiKeyExpiring":
        await keys.upsert(domainEvent.data.keyId, event.revision, { $set: { warned: true } });
        return;
      case "CustomerDeleted": {
        // Each key goes with a tombstone at the deletion's revision, not a plain delete: a replica
        // still replaying this customer's older events (ApiKeyIssued...) into the same read models
        // would otherwise bring a deleted customer's key back until it reached the deletion.
        const { customerId, apiKeyIds } = domainEvent.data;
        const held = await keys.findReadOnly({ customerId });
        for (const keyId of new Set([...held.map((key) => key._id), ...apiKeyIds]))
          await keys.deleteOne(keyId, event.revision);
        // The served read models' run completes it; a rebuild beside them replays history only.
        if (!context?.rebuilding) await onCustomerDeleted(customerId);
        return;
      }
    }
  };
}
