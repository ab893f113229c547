import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { WebhookEventKind } from "@cheese/contracts";
import { createSqliteEventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { createLogger, IdAllocator, type Projection, startProjection } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { NotificationDeps } from "../src/handlers/deps.ts";
import { fanOut, hasSubscriber } from "../src/handlers/fan-out.ts";
import { projectWebhook, WEBHOOKS_VERSION, webhooksCollection } from "../src/projections/webhooks.ts";
import { SecretBox } from "../src/security/secrets.ts";
import { registerWebhook } from "./support.ts";

const t0 = "2026-03-01T10:00:00.000Z";
const logger = createLogger("notification", "silent");
const stockKinds: WebhookEventKind[] = ["cheese.low_stock", "cheese.out_of_stock", "cheese.back_in_stock"];

/** An integration event's subscribers: asked before it is parsed (every kind it may become), then in its fan-out. */
describe("an event's subscribers (hasSubscriber, fanOut)", () => {
  const data = tempDir("fan-out");
  const store = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
  const projections: Projection[] = [];
  afterEach(async () => {
    for (const projection of projections) await projection.close();
    await store.close();
    data.remove();
  });

  it("sees a registration made just before, catching the registrations up once per event", async () => {
    const secrets = new SecretBox(randomBytes(32));
    const readModels = createMemoryReadModels();
    const webhooks = await startProjection({
      name: "webhooks",
      version: WEBHOOKS_VERSION,
      collections: [webhooksCollection],
      eventStore: store,
      readModels,
      categories: ["webhook"],
      apply: projectWebhook,
      logger,
    });
    projections.push(webhooks);
    let catchUps = 0;
    const counted: Projection = {
      ready: webhooks.ready,
      catchUp: (timeoutMs) => {
        catchUps++;
        return webhooks.catchUp(timeoutMs);
      },
      close: () => webhooks.close(),
    };
    const deps: NotificationDeps = {
      store,
      readModels,
      webhooks: counted,
      deliveries: counted,
      webhookIds: new IdAllocator(store, "webhook"),
      deliveryIds: new IdAllocator(store, "delivery"),
      secrets,
      delays: [],
      allowPrivateUrls: true,
      replayMax: 100,
      clock: new ManualClock(t0),
      wakeScheduler: () => {},
    };

    expect(await hasSubscriber(deps, stockKinds)).toBe(false);
    expect(catchUps).toBe(1);

    // Subscribed to the last of the kinds only: every kind is looked at, after one catch-up.
    await registerWebhook(store, secrets, { webhookId: 1, events: ["cheese.back_in_stock"], createdAt: t0 });
    catchUps = 0;
    expect(await hasSubscriber(deps, stockKinds)).toBe(true);
    expect(catchUps).toBe(1);

    catchUps = 0;
    expect(await hasSubscriber(deps, [])).toBe(false);
    expect(catchUps).toBe(0);

    // The consumer's fan-out of an event it asked about: no second catch-up, the subscriber found.
    const outgoing = { kind: "cheese.back_in_stock" as const, data: {}, firstDelivery: true };
    const asked = await fanOut(deps, { ...outgoing, eventId: "evt_1", subscribersCaughtUp: true }, {});
    expect(asked?.deliveries.map((d) => d.webhookId)).toEqual([1]);
    expect(catchUps).toBe(0);
    // Any other fan-out (a redelivery) catches up first.
    const redelivered = await fanOut(deps, { ...outgoing, eventId: "evt_2", firstDelivery: false }, {});
    expect(redelivered?.deliveries.map((d) => d.webhookId)).toEqual([1]);
    expect(catchUps).toBe(1);
  });
});
