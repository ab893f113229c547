import type { EventStore, RecordedEvent } from "@cheese/event-store";
import type { Closable } from "@cheese/messaging";
import type { ReadModelStore } from "@cheese/read-models";
import { type Clock, dueTimers, handleCommand, type Logger } from "@cheese/service-kit";
import { type CustomerEvent, customerDecider, customerStream } from "../domain/customer.ts";
import { API_KEYS, type ApiKeyDocument } from "../projections/api-keys.ts";

export interface ExpiryWarnings extends Closable {
  /** Follows the api_keys projection's events: a key issued is due, one revoked or warned is not. */
  apply(event: RecordedEvent): void;
  /** Every key neither revoked nor warned yet, from the read model (at start). */
  load(readModels: ReadModelStore): Promise<void>;
}

/**
 * Emits ApiKeyExpiring (→ api_key.expiring) once per key, `warnBeforeMs` before it expires: each
 * key neither revoked nor warned is a due timer of the kit (`dueTimers`), its set derived from
 * the api_keys read model at start and from the projection's events after. Every replica holds
 * every key; the decider warns once per key and the append's expected revision makes racing
 * replicas agree, so the event is written once.
 */
export function expiryWarnings(options: {
  store: EventStore;
  clock: Clock;
  /** How long before expiry the warning goes out (7 days). */
  warnBeforeMs: number;
  logger: Logger;
}): ExpiryWarnings {
  const { store, warnBeforeMs } = options;
  const timers = dueTimers<number, number>({
    name: "API key expiry warning",
    clock: options.clock,
    logger: options.logger,
    run: async (keyId, customerId) => {
      await handleCommand(store, customerStream(customerId), customerDecider, {
        type: "WarnApiKeyExpiring",
        keyId,
      });
    },
  });
  const due = (keyId: number, customerId: number, expiresAtMs: number) => {
    if (timers.dueAt(keyId) === undefined) timers.set(keyId, expiresAtMs - warnBeforeMs, customerId);
  };
  return {
    apply(recorded) {
      const event = { type: recorded.type, data: recorded.data } as CustomerEvent;
      switch (event.type) {
        case "ApiKeyIssued":
          due(event.data.keyId, event.data.customerId, Date.parse(event.data.expiresAt));
          return;
        case "ApiKeyRevoked":
        case "ApiKeyExpiring":
          timers.delete(event.data.keyId);
          return;
        case "CustomerDeleted":
          for (const keyId of event.data.apiKeyIds) timers.delete(keyId);
          return;
      }
    },
    async load(readModels) {
      const keys = await readModels
        .collection<ApiKeyDocument>(API_KEYS)
        .findReadOnly(
          { revoked: false, warned: false, expiresAtMs: { $lte: Number.MAX_SAFE_INTEGER } },
          { sort: { expiresAtMs: 1, _id: 1 } },
        );
      for (const key of keys) due(key._id, key.customerId, key.expiresAtMs);
    },
    close: () => timers.close(),
  };
}
