import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createSqliteEventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { foldEvents, handleCommand, upcasting } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it } from "vitest";
import { notificationEventVersions } from "../src/domain/event-versions.ts";
import { type LiveWebhook, webhookDecider, webhookStream } from "../src/domain/webhook.ts";
import { notificationService } from "../src/main.ts";
import { startWebhooksProjection, WEBHOOKS, type WebhookDocument } from "../src/projections/webhooks.ts";
import { SecretBox } from "../src/security/secrets.ts";
import { silentLogger, t0 } from "./support.ts";

describe("the notification service's event versions", () => {
  const data = tempDir("notification-versions");
  const raw = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
  afterEach(async () => {
    await raw.close();
    data.remove();
  });

  it("reads a registration stored before signatureAlgorithms as signing with the HMAC only", async () => {
    expect(notificationService.eventVersions).toBe(notificationEventVersions);
    // As the service wrote it before the field existed (version 1, no signatureAlgorithms).
    await raw.append(
      webhookStream(7),
      [
        {
          type: "WebhookRegistered",
          data: {
            webhookId: 7,
            url: "https://hooks.example.com/",
            events: ["order.placed"],
            description: null,
            secret: new SecretBox(randomBytes(32)).seal("whsec_x"),
            createdAt: t0,
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    const store = upcasting(raw, notificationEventVersions);
    const state = foldEvents(webhookDecider, await store.readStream(webhookStream(7))) as LiveWebhook;
    expect(state.registration.signatureAlgorithms).toEqual(["hmac-sha256"]);

    const readModels = createMemoryReadModels();
    const { projection } = await startWebhooksProjection({
      eventStore: store,
      readModels,
      logger: silentLogger,
    });
    try {
      await projection.catchUp();
      const document = await readModels
        .collection<WebhookDocument>(WEBHOOKS)
        .findOne({ _id: 7, deleted: false });
      expect(document?.webhook.signatureAlgorithms).toEqual(["hmac-sha256"]);
    } finally {
      await projection.close();
    }

    // Asking for what it already has records nothing; asking for ed25519 is a change.
    const same = await handleCommand(store, webhookStream(7), webhookDecider, {
      type: "Update",
      webhookId: 7,
      changes: { signatureAlgorithms: ["hmac-sha256"] },
      now: t0,
    });
    expect(same.newEvents).toEqual([]);
  });
});
