import type { WebhookEventKind } from "@cheese/contracts";
import type { EventStore, StreamAppend } from "@cheese/event-store";
import { createInProcessBroker } from "@cheese/messaging";
import { SharedBuckets } from "@cheese/rate-limits";
import { handleCommand, type Projection } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { Receiver } from "@cheese/testing/receiver";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DeliveryScheduler } from "../src/delivery/scheduler.ts";
import { WEBHOOK_THROTTLE } from "../src/delivery/throttle-gate.ts";
import { deliveryDecider, deliveryStream } from "../src/domain/delivery.ts";
import { envelopeBody, webhookEventDecider, webhookEventStream } from "../src/domain/event-mapping.ts";
import { fanOut, hasSubscriber } from "../src/handlers/fan-out.ts";
import { generateWebhookSecret } from "../src/security/secrets.ts";
import { WebhookSigningKeys } from "../src/security/signing-keys.ts";
import { notificationDeps, notificationStores, registerWebhook, silentLogger, t0 } from "./support.ts";

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

type Stores = ReturnType<typeof notificationStores>;
const planned = { kind: "order.placed" as const, data: { order_id: "7" }, createdAt: t0 };

/** The store, with the fan-out's writes (of its record and deliveries) noted, streams in the order given. */
function noting(store: EventStore, change: (appends: StreamAppend[]) => StreamAppend[] = (a) => a) {
  const writes: string[][] = [];
  const ours = (name: string) => name.startsWith("webhookevent-") || name.startsWith("delivery-");
  const noted: EventStore = {
    ...store,
    async append(streamName, events, options) {
      if (ours(streamName)) writes.push([streamName]);
      return store.append(streamName, events, options);
    },
    async appendStreams(appends) {
      const names = appends.map(({ streamName }) => streamName);
      if (names.some(ours)) writes.push(names);
      return store.appendStreams(change(appends));
    },
  };
  return { noted, writes };
}

async function threeRegistrations(stores: Stores) {
  const { store, secrets } = stores;
  const webhooks = await stores.startWebhooks();
  for (const webhookId of [1, 2, 3])
    await registerWebhook(store, secrets, { webhookId, events: ["order.placed"], createdAt: t0 });
  return webhooks;
}

/** The ids of the deliveries created in the store. */
async function deliveriesIn(store: EventStore) {
  const found: number[] = [];
  for await (const event of store.readAll({ categories: ["delivery"] }))
    if (event.type === "DeliveryCreated") found.push((event.data as { deliveryId: number }).deliveryId);
  return found.sort((a, b) => a - b);
}

/** The fan-out's writes: its event's record and the record's deliveries, together. */
describe("an event's record and its deliveries (fanOut)", () => {
  const stores = notificationStores("fan-out-one-write");

  it("are written in one append, the record first; the event handled again finds them and adds none", async () => {
    const webhooks = await threeRegistrations(stores);
    const { noted, writes } = noting(stores.store);
    const deps = notificationDeps({ ...stores, store: noted }, { webhooks, deliveries: webhooks });

    const recorded = await fanOut(deps, { ...planned, eventId: "evt_1", firstDelivery: true }, {});

    const ids = recorded!.deliveries.map(({ deliveryId }) => deliveryId);
    expect(recorded!.deliveries.map(({ webhookId }) => webhookId)).toEqual([1, 2, 3]);
    // One write (one group commit); the record ahead of its deliveries (the order that stands
    // where a store writes the streams one after the other).
    expect(writes).toEqual([["webhookevent-1", ...ids.map(deliveryStream)]]);
    expect(await deliveriesIn(stores.store)).toEqual(ids);

    writes.length = 0;
    const again = await fanOut(deps, { ...planned, eventId: "evt_1", firstDelivery: false }, {});
    expect(again!.deliveries.map(({ deliveryId }) => deliveryId)).toEqual(ids);
    expect(writes).toEqual([]);
    expect(await deliveriesIn(stores.store)).toEqual(ids);
  });
});

describe("an event's record and its deliveries, one of them refused (fanOut)", () => {
  const stores = notificationStores("fan-out-refused");

  it("writes neither the record nor any delivery; handled again, the event gets them all", async () => {
    const webhooks = await threeRegistrations(stores);
    // The last delivery's expectation made one its stream cannot meet, on every try.
    const { noted } = noting(stores.store, (appends) =>
      appends.map((append, i) => (i === appends.length - 1 ? { ...append, expectedRevision: 7 } : append)),
    );
    const failing = notificationDeps({ ...stores, store: noted }, { webhooks, deliveries: webhooks });

    await expect(
      fanOut(failing, { ...planned, eventId: "evt_2", firstDelivery: true }, {}),
    ).rejects.toThrow();

    expect(await stores.store.readStream(webhookEventStream("evt_2"))).toEqual([]);
    expect(await deliveriesIn(stores.store)).toEqual([]);

    const deps = notificationDeps(stores, { webhooks, deliveries: webhooks });
    const recorded = await fanOut(deps, { ...planned, eventId: "evt_2", firstDelivery: false }, {});
    expect(recorded!.deliveries).toHaveLength(3);
    expect(await deliveriesIn(stores.store)).toEqual(
      recorded!.deliveries.map(({ deliveryId }) => deliveryId),
    );
  });
});

describe("a record left without some of its deliveries (fanOut)", () => {
  const stores = notificationStores("fan-out-repair");

  it("is completed when its event is handled again, with the record's ids (a crash between the streams where the store is not atomic)", async () => {
    const webhooks = await threeRegistrations(stores);
    const deps = notificationDeps(stores, { webhooks, deliveries: webhooks });
    // As the EventStoreDB adapter may leave it: the record written, one of its two deliveries not.
    const plan = {
      eventId: "evt_3",
      type: "order.placed" as const,
      createdAt: t0,
      body: envelopeBody("evt_3", "order.placed", t0, planned.data),
      deliveries: [
        { webhookId: 1, deliveryId: 101 },
        { webhookId: 2, deliveryId: 102 },
      ],
    };
    await handleCommand(stores.store, webhookEventStream("evt_3"), webhookEventDecider, {
      type: "Record",
      event: plan,
    });
    const facts = { deliveryId: 101, webhookId: 1, eventId: "evt_3", eventType: "order.placed" as const };
    await handleCommand(stores.store, deliveryStream(101), deliveryDecider, {
      type: "Create",
      facts: { ...facts, body: plan.body, createdAt: t0 },
      delays: [0],
    });

    const recorded = await fanOut(deps, { ...planned, eventId: "evt_3", firstDelivery: false }, {});

    expect(recorded).toEqual(plan);
    expect(await deliveriesIn(stores.store)).toEqual([101, 102]);
    expect(await stores.store.readStream(deliveryStream(101))).toHaveLength(1);
  });
});

/**
 * A fan-out wired to a scheduler over the same (noted) store, as `main.ts` wires them, sending to
 * a local receiver; for the tests of one `describe`.
 */
function withScheduler(name: string) {
  const stores = notificationStores(name);
  let receiver: Receiver;
  let scheduler: DeliveryScheduler | undefined;
  beforeEach(async () => {
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await scheduler?.close();
    scheduler = undefined;
    await receiver.close();
  });

  const startFanOut = async (maxInFlightPerWebhook: number) => {
    const webhooks = await stores.startWebhooks();
    const { noted, writes } = noting(stores.store);
    const clock = new ManualClock(new Date(t0));
    scheduler = new DeliveryScheduler({
      store: noted,
      secrets: stores.secrets,
      signingKeys: new WebhookSigningKeys(stores.store, stores.secrets, clock),
      delays: [0, 60_000],
      timeoutMs: 1000,
      leaseMs: 6000,
      allowPrivate: true,
      maxInFlightPerWebhook,
      maxInFlight: 50,
      disableAfterMs: 3_600_000,
      retryAfterMaxMs: 3_600_000,
      throttle: new SharedBuckets(createInProcessBroker().connect(), silentLogger, clock, WEBHOOK_THROTTLE),
      clock,
      logger: silentLogger,
    });
    scheduler.start();
    await scheduler.ready;
    const local = scheduler;
    const deps = notificationDeps(
      { ...stores, store: noted },
      {
        webhooks,
        deliveries: webhooks,
        clock,
        delays: [0, 60_000],
        wakeScheduler: (created) => local.wake(created),
        firstAttempt: (deliveryId, webhookId, metadata) =>
          local.firstAttempt(deliveryId, webhookId, metadata),
      },
    );
    return { deps, writes, scheduler: local, clock };
  };
  const register = (webhookId: number, extra: { rateLimit?: { perSecond: number } } = {}) =>
    registerWebhook(stores.store, stores.secrets, {
      webhookId,
      events: ["order.placed"],
      createdAt: t0,
      url: receiver.url(`/hook-${webhookId}`),
      secret: generateWebhookSecret(),
      ...extra,
    });
  const typesOf = async (deliveryId: number) =>
    (await stores.store.readStream(deliveryStream(deliveryId))).map((event) => event.type);

  return { startFanOut, register, typesOf, receiver: () => receiver };
}

/**
 * The first attempt of a delivery that may go at once is claimed in the append that creates it
 * (the local scheduler holds a slot for it): a delivery is two writes, not three, and goes out
 * without waiting for a claim of its own.
 */
describe("the first attempt claimed as its delivery is created (fanOut and the scheduler)", () => {
  const { startFanOut, register, typesOf, receiver } = withScheduler("fan-out-first-attempt");

  it("sends each delivery at once, created and claimed in one write, its result in another", async () => {
    for (const webhookId of [1, 2]) await register(webhookId);
    const { deps, writes, scheduler } = await startFanOut(5);

    const recorded = await fanOut(deps, { ...planned, eventId: "evt_1", firstDelivery: true }, {});
    const ids = recorded!.deliveries.map(({ deliveryId }) => deliveryId);
    await receiver().waitFor("/hook-1", 1);
    await receiver().waitFor("/hook-2", 1);
    await scheduler.settle();

    for (const id of ids)
      expect(await typesOf(id)).toEqual(["DeliveryCreated", "AttemptStarted", "AttemptSucceeded"]);
    // The record with both deliveries (created and claimed), then each result: no claim of its own.
    expect(writes).toEqual([
      ["webhookevent-1", ...ids.map(deliveryStream)],
      ...ids.map((id) => [deliveryStream(id)]),
    ]);
  });
});

describe("what cannot go at once is claimed by the scheduler (fanOut and the scheduler)", () => {
  const { startFanOut, register, typesOf, receiver } = withScheduler("fan-out-first-attempt-later");

  it("leaves to the scheduler what cannot go at once: a throttled registration's, and one past the slots", async () => {
    await register(1, { rateLimit: { perSecond: 1 } });
    await register(2);
    const { deps, writes, scheduler, clock } = await startFanOut(1);

    // Two events at once: registration 2 has one slot, so its second delivery waits for it.
    const [first, second] = await Promise.all(
      ["evt_a", "evt_b"].map((eventId) => fanOut(deps, { ...planned, eventId, firstDelivery: true }, {})),
    );
    await receiver().waitFor("/hook-2", 2);
    await receiver().waitFor("/hook-1", 1);
    // The throttle's next slot, a second on.
    await scheduler.settle();
    await clock.advance(1000);
    await receiver().waitFor("/hook-1", 2);
    await scheduler.settle();

    const [throttled, plain] = first!.deliveries.map(({ deliveryId }) => deliveryId);
    const [, waited] = second!.deliveries.map(({ deliveryId }) => deliveryId);
    const claims = (id: number) =>
      writes.filter((names) => names.length === 1 && names[0] === deliveryStream(id));
    // Created and claimed together: the unthrottled one with a slot free. The others claimed on
    // their own (a write), then their result (another).
    expect(claims(plain!)).toHaveLength(1);
    expect(claims(throttled!)).toHaveLength(2);
    expect(claims(waited!)).toHaveLength(2);
    for (const id of [throttled!, plain!, waited!])
      expect(await typesOf(id)).toEqual(["DeliveryCreated", "AttemptStarted", "AttemptSucceeded"]);
    expect(receiver().requests("/hook-1")).toHaveLength(2);
    expect(receiver().requests("/hook-2")).toHaveLength(2);
  });
});
