import type { WebhookEventKind } from "@cheese/contracts";
import type { Projection } from "@cheese/service-kit";
import { describe, expect, it } from "vitest";
import { deliveryStream } from "../src/domain/delivery.ts";
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

/** An ordered registration's deliveries join their aggregate's lane (domain/lane.ts) as they are recorded. */
describe("fan-out to an ordered registration", () => {
  const stores = notificationStores("fan-out-lanes");

  it("puts an ordered registration's delivery in its aggregate's lane, first due once the lane has settled", async () => {
    const { store, secrets } = stores;
    const webhooks = await stores.startWebhooks();
    const deps = notificationDeps(stores, {
      webhooks,
      deliveries: webhooks,
      delays: [0, 60_000],
      laneSettleMs: 1000,
    });
    await registerWebhook(store, secrets, {
      webhookId: 1,
      events: ["order.placed"],
      createdAt: t0,
      ordered: true,
    });
    await registerWebhook(store, secrets, { webhookId: 2, events: ["order.placed"], createdAt: t0 });

    const recorded = await fanOut(
      deps,
      { eventId: "evt_7", kind: "order.placed", data: { order_id: "7" }, createdAt: t0, revision: 4 },
      {},
    );
    const [ordered, plain] = recorded!.deliveries;
    expect(ordered).toMatchObject({ webhookId: 1, lane: "webhooklane-1:order-7" });
    expect(plain).toEqual({ webhookId: 2, deliveryId: plain!.deliveryId });

    const [joined] = await store.readStream("webhooklane-1:order-7");
    expect(joined).toMatchObject({
      type: "LaneJoined",
      data: { deliveryId: ordered!.deliveryId, createdAt: t0, revision: 4 },
    });
    const [created] = await store.readStream(deliveryStream(ordered!.deliveryId));
    expect(created!.data).toMatchObject({ lane: "webhooklane-1:order-7", dueAt: "2026-03-01T10:00:01.000Z" });
    const [createdPlain] = await store.readStream(deliveryStream(plain!.deliveryId));
    expect(createdPlain!.data).toMatchObject({ dueAt: t0 });
    expect(createdPlain!.data).not.toHaveProperty("lane");
  });
});
