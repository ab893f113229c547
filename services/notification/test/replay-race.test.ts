import type { ReadModelStore } from "@cheese/read-models";
import { describe, expect, it } from "vitest";
import { type DeliveryEvent, deliveryStream } from "../src/domain/delivery.ts";
import { replayDeliveries } from "../src/handlers/webhook-commands.ts";
import { DELIVERIES } from "../src/projections/deliveries.ts";
import {
  requestContext as context,
  notificationDeps,
  notificationStores,
  registerWebhook,
  t0,
} from "./support.ts";

/**
 * Two replays of the same window reaching the service at once (two replicas, or a client that
 * sent its request twice): each finished delivery starts one new round, even when the second
 * call acts only after the first call's round has been delivered already.
 */
describe("two replays of the same window racing", () => {
  const stores = notificationStores("replay-race");

  it("start each delivery once, though the second acts after the first one's round was delivered", async () => {
    const { store, secrets, readModels } = stores;
    await registerWebhook(store, secrets, { webhookId: 1, events: ["order.placed"], createdAt: t0 });
    const deliveredIn = (round: number): DeliveryEvent[] => [
      { type: "AttemptStarted", data: { round, attempt: 1, startedAt: t0 } },
      {
        type: "AttemptSucceeded",
        data: { round, attempt: 1, statusCode: 200, durationMs: 1, finishedAt: t0 },
      },
    ];
    await store.append(
      deliveryStream(7),
      [
        {
          type: "DeliveryCreated",
          data: {
            deliveryId: 7,
            webhookId: 1,
            eventId: "evt_7",
            eventType: "order.placed",
            body: "{}",
            createdAt: t0,
            dueAt: t0,
          },
        },
        ...deliveredIn(0),
      ],
      { expectedRevision: "no_stream" },
    );

    const deliveries = await stores.startDeliveries();

    // The first call to list the matching deliveries has its answer held back until released:
    // that call has found round 0 delivered, and acts only later.
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held: () => void = () => {};
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    let finds = 0;
    const gated: ReadModelStore = Object.create(readModels, {
      collection: {
        value: (name: string) => {
          const collection = readModels.collection(name);
          if (name !== DELIVERIES) return collection;
          return Object.create(collection, {
            find: {
              value: async (...args: Parameters<typeof collection.find>) => {
                const found = await collection.find(...args);
                if (++finds === 1) {
                  held();
                  await released;
                }
                return found;
              },
            },
          });
        },
      },
    });
    const deps = notificationDeps(stores, { readModels: gated, webhooks: deliveries, deliveries });
    const window = { webhookId: 1, statuses: ["delivered" as const] };

    const late = replayDeliveries(deps, window, context);
    await holding;
    const first = await replayDeliveries(deps, window, context);
    // The first call's round goes out and is delivered before the late call acts.
    await store.append(deliveryStream(7), deliveredIn(1), { expectedRevision: "any" });
    release();

    expect([first, await late]).toEqual([{ replayed: 1 }, { replayed: 0 }]);
    const events = await store.readStream(deliveryStream(7));
    expect(events.filter((event) => event.type === "DeliveryReplayed")).toHaveLength(1);
    // A replay asked for now that round 1 is delivered starts round 2.
    expect(await replayDeliveries(deps, window, context)).toEqual({ replayed: 1 });
  });
});
