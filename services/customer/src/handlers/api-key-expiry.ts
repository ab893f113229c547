import type { EventStore } from "@cheese/event-store";
import type { Closable } from "@cheese/messaging";
import type { ReadModelStore } from "@cheese/read-models";
import { type Clock, handleCommand, type Logger, type Projection } from "@cheese/service-kit";
import { customerDecider, customerStream } from "../domain/customer.ts";
import { API_KEYS, type ApiKeyDocument } from "../projections/api-keys.ts";

export interface ExpiryWarningOptions {
  store: EventStore;
  readModels: ReadModelStore;
  apiKeys: Projection;
  clock: Clock;
  /** How long before expiry the warning goes out (7 days). */
  warnBeforeMs: number;
  /** How often to look for keys entering that window. */
  intervalMs: number;
  logger: Logger;
}

/**
 * Emits ApiKeyExpiring (→ api_key.expiring) once per key when it comes within `warnBeforeMs` of
 * expiry. Every replica looks; the decider warns once per key and the append's expected revision
 * makes racing replicas agree, so the event is written once.
 */
export function startExpiryWarnings(options: ExpiryWarningOptions): Closable {
  const { store, readModels, apiKeys, clock, warnBeforeMs, intervalMs, logger } = options;
  let running: Promise<void> | undefined;
  const check = async () => {
    await apiKeys.catchUp();
    const due = await readModels
      .collection<ApiKeyDocument>(API_KEYS)
      .find(
        { revoked: false, warned: false, expiresAtMs: { $lte: clock.now().getTime() + warnBeforeMs } },
        { sort: { expiresAtMs: 1 }, limit: 100 },
      );
    for (const key of due) {
      await handleCommand(store, customerStream(key.customerId), customerDecider, {
        type: "WarnApiKeyExpiring",
        keyId: key._id,
      });
    }
  };
  const timer = clock.setInterval(() => {
    running ??= check()
      .catch((error) => logger.error({ err: error }, "API key expiry check failed"))
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  return {
    async close() {
      timer.cancel();
      await running;
    },
  };
}
