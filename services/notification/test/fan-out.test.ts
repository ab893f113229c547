import type { WebhookEventKind } from "@cheese/contracts";
import type { Projection } from "@cheese/service-kit";
import { describe, expect, it } from "vitest";
import { fanOut, hasSubscriber } from "../src/handlers/fan-out.ts";
import { notificationDeps, notificationStores, registerWebhook, t0 } from "./support.ts";

const stockKinds: WebhookEventKind[] = ["cheese.low_stock", "cheese.out_of_stock", "cheese.back_in_stock"];

/** An integration event's subscribers: asked before it is parsed (every kind it may become), then in its fan-out. */
describe("an event's subscribers (hasSubscriber, fanOut)", () => {
  const stores = notificationStores("fan-out");

  it("sees a registration made just before, catching the registrations up once per event", async () => {
    const { store, secrets } = stores;
    const webhooks = await stores.startWebhooks();
    let catchUps = 0;
    const counted: Projection = {
      ready: webhooks.ready,
      catchUp: (timeoutMs) => {
        catchUps++;
        return webhooks.catchUp(timeoutMs);
      },
      rebuild: () => webhooks.rebuild(),
      close: () => webhooks.close(),
    };
    const deps = notificationDeps(stores, { webhooks: counted, deliveries: counted });

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
