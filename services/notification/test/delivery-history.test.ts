import type { Projection } from "@cheese/service-kit";
import { describe, expect, it } from "vitest";
import { webhookStream } from "../src/domain/webhook.ts";
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
    const deps = notificationDeps(stores, { webhooks: loaded, deliveries: loading });
    const unavailable = { body: { status: 503, type: "service_unavailable" } };

    await expect(deleteWebhook(deps, 1, context)).rejects.toMatchObject(unavailable);
    await expect(replayDeliveries(deps, { webhookId: 1 }, context)).rejects.toMatchObject(unavailable);
    const events = await store.readStream(webhookStream(1));
    expect(events.map((event) => event.type)).toEqual(["WebhookRegistered"]);
  });
});
