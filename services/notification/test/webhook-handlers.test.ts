import { notificationRpc } from "@cheese/contracts";
import { type ServiceSpec, serviceSpec } from "@cheese/service-kit/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { notificationService } from "../src/main.ts";

const at = "2026-11-22T10:00:00.000Z";
/** A receiver that is never called here: the test event's delivery waits for its first attempt. */
const url = "http://127.0.0.1:9/hooks";

/** Given events, when an RPC, then its reply and the events it appended. */
describe("the notification service's handlers", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(notificationService, {
      start: at,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_DELAYS: "1h" },
    });
  });
  afterEach(async () => {
    await spec.stop();
  });

  it("registers a webhook at the clock's time, its secret answered once and recorded only sealed", async () => {
    const created = await spec
      .given()
      .when(notificationRpc.createWebhook, { url, events: ["order.placed"], description: null })
      .thenReturns({
        reply: { id: 1, url, events: ["order.placed"], description: null, createdAt: at },
        events: {
          "webhook-1": [
            {
              type: "WebhookRegistered",
              data: expect.objectContaining({ webhookId: 1, url, events: ["order.placed"], createdAt: at }),
            },
          ],
        },
      });
    const [registered] = await spec.store.readStream("webhook-1");
    expect(JSON.stringify(registered)).not.toContain(created.secret);
  });

  it("plans a test event as one delivery to that registration, due after the first delay", async () => {
    await spec
      .given()
      .when(notificationRpc.createWebhook, { url, events: ["order.placed"], description: null })
      .thenReturns({});
    await spec
      .given()
      .when(notificationRpc.sendTestEvent, { webhookId: 1 })
      .thenReturns({
        reply: { deliveryId: 1 },
        events: {
          "delivery-1": [
            {
              type: "DeliveryCreated",
              data: expect.objectContaining({
                deliveryId: 1,
                webhookId: 1,
                eventType: "webhook.test",
                createdAt: at,
                dueAt: "2026-11-22T11:00:00.000Z",
              }),
            },
          ],
        },
      });
  });

  it("refuses a test event for a registration that does not exist (404)", async () => {
    await spec
      .given()
      .when(notificationRpc.sendTestEvent, { webhookId: 404 })
      .thenRefuses({ status: 404, type: "not_found" }, ["delivery-1"]);
  });
});
