import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createSqliteEventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { createLogger, IdAllocator, type Projection } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it } from "vitest";
import { webhookStream } from "../src/domain/webhook.ts";
import type { NotificationDeps } from "../src/handlers/deps.ts";
import { deleteWebhook, replayDeliveries } from "../src/handlers/webhook-commands.ts";
import { SecretBox } from "../src/security/secrets.ts";
import { registerWebhook } from "./support.ts";

/**
 * While the in-memory delivery history is still being rebuilt after a start, the operations that
 * read it answer 503 (with Retry-After at the gateway) and change nothing, rather than acting on
 * an incomplete list.
 */
describe("operations on a delivery history still loading", () => {
  const data = tempDir("delivery-history");
  const store = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
  afterEach(async () => {
    await store.close();
    data.remove();
  });

  it("answer 503 and leave the registration as it was", async () => {
    const clock = new ManualClock("2026-03-01T10:00:00.000Z");
    const secrets = new SecretBox(randomBytes(32));
    await registerWebhook(store, secrets, {
      webhookId: 1,
      events: ["order.placed"],
      createdAt: clock.now().toISOString(),
    });
    const loaded: Projection = { ready: Promise.resolve(), catchUp: async () => true, close: async () => {} };
    const loading: Projection = {
      ready: new Promise(() => {}),
      catchUp: async () => true,
      close: async () => {},
    };
    const deps: NotificationDeps = {
      store,
      clock,
      readModels: createMemoryReadModels(),
      webhooks: loaded,
      deliveries: loading,
      webhookIds: new IdAllocator(store, "webhook"),
      deliveryIds: new IdAllocator(store, "delivery"),
      secrets,
      delays: [0],
      allowPrivateUrls: false,
      replayMax: 10,
      wakeScheduler: () => {},
    };
    const context = { requestId: "r", correlationId: "c", logger: createLogger("notification", "silent") };
    const unavailable = { body: { status: 503, type: "service_unavailable" } };

    await expect(deleteWebhook(deps, 1, context)).rejects.toMatchObject(unavailable);
    await expect(replayDeliveries(deps, { webhookId: 1 }, context)).rejects.toMatchObject(unavailable);
    const events = await store.readStream(webhookStream(1));
    expect(events.map((event) => event.type)).toEqual(["WebhookRegistered"]);
  });
});
