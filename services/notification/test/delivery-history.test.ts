import type { Projection } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import { webhookStream } from "../src/domain/webhook.ts";
import { LOADING_WAIT_MS } from "../src/handlers/delivery-history.ts";
import { deleteWebhook, replayDeliveries } from "../src/handlers/webhook-commands.ts";
import {
  requestContext as context,
  notificationDeps,
  notificationStores,
  registerWebhook,
  t0,
} from "./support.ts";

/**
 * While the in-memory delivery history is still being rebuilt after a start, the operations that
 * read it answer 503 (with Retry-After at the gateway) and change nothing, rather than acting on
 * an incomplete list.
 */
describe("operations on a delivery history still loading", () => {
  const stores = notificationStores("delivery-history");

  it("answer 503 and leave the registration as it was", async () => {
    const { store, secrets } = stores;
    await registerWebhook(store, secrets, { webhookId: 1, events: ["order.placed"], createdAt: t0 });
    const fake = { catchUp: async () => true, rebuild: () => Promise.reject(new Error("no rebuild here")) };
    const loaded: Projection = { ...fake, ready: Promise.resolve(), close: async () => {} };
    const loading: Projection = { ...fake, ready: new Promise(() => {}), close: async () => {} };
    const clock = new ManualClock(t0);
    const deps = notificationDeps(stores, { webhooks: loaded, deliveries: loading, clock });
    const unavailable = { body: { status: 503, type: "service_unavailable" } };
    /** What the operation answered, and how long it waited first, on the injected clock. */
    const afterTheWait = async (operation: Promise<unknown>) => {
      let outcome: { answer: unknown } | undefined;
      operation.then(
        (answer: unknown) => {
          outcome = { answer };
        },
        (error: unknown) => {
          outcome = { answer: error };
        },
      );
      let waitedMs = 0;
      while (!outcome && waitedMs < 60_000) {
        await clock.advance(100);
        waitedMs += 100;
      }
      return { ...outcome, waitedMs };
    };

    for (const operation of [
      () => deleteWebhook(deps, 1, context),
      () => replayDeliveries(deps, { webhookId: 1 }, context),
    ]) {
      const { answer, waitedMs } = await afterTheWait(operation());
      expect(answer).toMatchObject(unavailable);
      expect(waitedMs).toBeGreaterThanOrEqual(LOADING_WAIT_MS);
    }
    const events = await store.readStream(webhookStream(1));
    expect(events.map((event) => event.type)).toEqual(["WebhookRegistered"]);
  });
});
