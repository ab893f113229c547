import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { WebhookEventKind } from "@cheese/contracts";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { createInProcessBroker } from "@cheese/messaging";
import { SharedBuckets } from "@cheese/rate-limits";
import { createLogger, foldEvents, handleCommand, isoNow } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { envelopeOf, type ReceivedRequest, Receiver } from "@cheese/testing/receiver";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DeliveryScheduler } from "../src/delivery/scheduler.ts";
import { WEBHOOK_THROTTLE } from "../src/delivery/throttle-gate.ts";
import { type DeliveryState, deliveryDecider, deliveryStream } from "../src/domain/delivery.ts";
import { envelopeBody } from "../src/domain/event-mapping.ts";
import { laneDecider, laneStream } from "../src/domain/lane.ts";
import { generateWebhookSecret, SecretBox } from "../src/security/secrets.ts";
import { WebhookSigningKeys } from "../src/security/signing-keys.ts";
import { registerWebhook } from "./support.ts";

const t0 = Date.parse("2026-03-01T10:00:00.000Z");

/**
 * Two schedulers (two replicas) over one event store, with an injected clock: the lanes, kept in
 * the store, hold each aggregate's deliveries in order whichever replica attempts them.
 */
describe("ordered lanes across two schedulers", () => {
  let data: ReturnType<typeof tempDir>;
  let store: EventStore;
  let receiver: Receiver;
  let clock: ManualClock;
  const secrets = new SecretBox(randomBytes(32));
  const schedulers: DeliveryScheduler[] = [];

  beforeEach(async () => {
    data = tempDir("lanes");
    store = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
    receiver = await Receiver.start();
    clock = new ManualClock(new Date(t0));
  });
  afterEach(async () => {
    for (const scheduler of schedulers.splice(0)) await scheduler.close();
    await store.close();
    await receiver.close();
    data.remove();
  });

  const startReplicas = async (delays: number[]) => {
    // The NATS the replicas share, in process (the throttle's slots).
    const broker = createInProcessBroker();
    for (let i = 0; i < 2; i++) {
      const scheduler = new DeliveryScheduler({
        store,
        secrets,
        signingKeys: new WebhookSigningKeys(store, secrets, clock),
        delays,
        timeoutMs: 1000,
        leaseMs: 6000,
        allowPrivate: true,
        maxInFlightPerWebhook: 5,
        maxInFlight: 50,
        disableAfterMs: 1_000_000_000,
        retryAfterMaxMs: 3_600_000,
        throttle: new SharedBuckets(
          broker.connect(),
          createLogger("notification", "silent"),
          clock,
          WEBHOOK_THROTTLE,
        ),
        clock,
        logger: createLogger("notification", "silent"),
      });
      scheduler.start();
      schedulers.push(scheduler);
      await scheduler.ready;
    }
  };
  const advance = async (ms: number) => {
    for (const scheduler of schedulers) await scheduler.settle();
    await clock.advance(ms);
    for (const scheduler of schedulers) await scheduler.settle();
  };

  let nextDelivery = 1;
  /** An event of order `orderId` recorded for registration 1 in its lane, as the fan-out records it. */
  const orderEvent = async (kind: WebhookEventKind, orderId: number, revision: number, delays: number[]) =>
    (await joinLane(orderId, revision)).create(kind, delays);
  /** Its place in the lane first, its delivery when `create` is called (as a fan-out records them). */
  const joinLane = async (orderId: number, revision: number) => {
    const deliveryId = nextDelivery++;
    const eventId = `evt_${deliveryId.toString(16).padStart(32, "0")}`;
    const createdAt = isoNow(clock);
    const lane = laneStream(1, `order-${orderId}`);
    await handleCommand(store, lane, laneDecider, { type: "Join", deliveryId, createdAt, revision });
    return {
      create: (kind: WebhookEventKind, delays: number[]) =>
        createDelivery(deliveryId, eventId, createdAt, lane, orderId, kind, delays),
    };
  };
  const createDelivery = async (
    deliveryId: number,
    eventId: string,
    createdAt: string,
    lane: string,
    orderId: number,
    kind: WebhookEventKind,
    delays: number[],
  ) => {
    await handleCommand(store, deliveryStream(deliveryId), deliveryDecider, {
      type: "Create",
      facts: {
        deliveryId,
        webhookId: 1,
        eventId,
        eventType: kind,
        body: envelopeBody(eventId, kind, createdAt, { order_id: String(orderId) }),
        createdAt,
        lane,
      },
      delays,
    });
    return deliveryId;
  };
  const status = async (deliveryId: number) =>
    (foldEvents(deliveryDecider, await store.readStream(deliveryStream(deliveryId))) as DeliveryState).status;
  const seen = (request: ReceivedRequest) => {
    const { type, data } = envelopeOf(request);
    return `${(data as { order_id: string }).order_id} ${type} #${request.headers["x-cheese-sequence"]}`;
  };
  const delivered = () =>
    receiver
      .requests("/lanes")
      .filter((_, i) => answers[i] === 200)
      .map(seen);
  let answers: number[] = [];

  it("holds an order's next event until the one before is delivered, and lets another order through", async () => {
    const delays = [0, 1000, 1000, 1000, 1000];
    await startReplicas(delays);
    let refusePlaced = true;
    answers = [];
    receiver.behave("/lanes", (request) => {
      const refused = refusePlaced && envelopeOf(request).type === "order.placed";
      answers.push(refused ? 500 : 200);
      return { status: refused ? 500 : 200 };
    });
    await registerWebhook(store, secrets, {
      webhookId: 1,
      url: receiver.url("/lanes"),
      secret: generateWebhookSecret(),
      events: ["order.placed", "order.confirmed"],
      createdAt: isoNow(clock),
    });

    const placed = await orderEvent("order.placed", 7, 0, delays);
    await expect.poll(() => receiver.requests("/lanes").length).toBe(1);
    const confirmed = await orderEvent("order.confirmed", 7, 3, delays);
    const other = await orderEvent("order.confirmed", 8, 3, delays);
    await expect.poll(() => status(other)).toBe("delivered");
    await advance(1000);
    await advance(1000); // placed failed three times; confirmed was never tried
    expect(await status(confirmed)).toBe("pending");
    expect(receiver.requests("/lanes").map(seen)).toEqual([
      "7 order.placed #1",
      "8 order.confirmed #1",
      "7 order.placed #1",
      "7 order.placed #1",
    ]);

    refusePlaced = false;
    await advance(1000);
    await expect.poll(() => status(confirmed)).toBe("delivered");
    expect(delivered()).toEqual(["8 order.confirmed #1", "7 order.placed #1", "7 order.confirmed #2"]);
    expect(await status(placed)).toBe("delivered");
  });

  it("lets the next go once the one before is dead-lettered, which keeps its number (a gap)", async () => {
    await startReplicas([0]);
    answers = [];
    receiver.behave("/lanes", (request) => {
      const refused = envelopeOf(request).type === "order.placed";
      answers.push(refused ? 500 : 200);
      return { status: refused ? 500 : 200 };
    });
    await registerWebhook(store, secrets, {
      webhookId: 1,
      url: receiver.url("/lanes"),
      secret: generateWebhookSecret(),
      events: ["order.placed", "order.confirmed"],
      createdAt: isoNow(clock),
    });
    // Recorded out of order (the later event's fan-out first): the lane still sends the earlier first.
    const later = await joinLane(7, 3);
    const earlier = await joinLane(7, 0);
    const confirmed = await later.create("order.confirmed", [0]);
    const placed = await earlier.create("order.placed", [0]);
    await expect.poll(() => status(confirmed)).toBe("delivered");
    expect(await status(placed)).toBe("dead_lettered");
    expect(receiver.requests("/lanes").map(seen)).toEqual(["7 order.placed #1", "7 order.confirmed #2"]);
  });

  it("replays a lane's dead letters in lane order, one at a time, with the numbers they kept", async () => {
    await startReplicas([0]);
    let refuse = true;
    answers = [];
    const slowAnswerMs = 200;
    receiver.behave("/lanes", (request) => {
      answers.push(refuse ? 500 : 200);
      // Replayed, order.placed takes its time to answer: order.confirmed must wait for it.
      const slow = !refuse && envelopeOf(request).type === "order.placed";
      return { status: refuse ? 500 : 200, ...(slow ? { delayMs: slowAnswerMs } : {}) };
    });
    await registerWebhook(store, secrets, {
      webhookId: 1,
      url: receiver.url("/lanes"),
      secret: generateWebhookSecret(),
      events: ["order.placed", "order.confirmed"],
      createdAt: isoNow(clock),
    });
    const placed = await orderEvent("order.placed", 7, 0, [0]);
    const confirmed = await orderEvent("order.confirmed", 7, 3, [0]);
    await expect.poll(() => status(confirmed)).toBe("dead_lettered");
    expect(await status(placed)).toBe("dead_lettered");

    refuse = false;
    // As POST /webhooks/{id}/replay starts them: oldest first, one after the other.
    for (const deliveryId of [placed, confirmed]) {
      await handleCommand(store, deliveryStream(deliveryId), deliveryDecider, {
        type: "Replay",
        now: isoNow(clock),
        statuses: ["dead_lettered"],
        round: 0,
      });
    }
    await expect.poll(() => status(confirmed)).toBe("delivered");
    expect(await status(placed)).toBe("delivered");
    expect(delivered()).toEqual(["7 order.placed #1", "7 order.confirmed #2"]);
    const [placedAgain, confirmedAgain] = receiver.requests("/lanes").slice(-2);
    expect(confirmedAgain!.receivedAt - placedAgain!.receivedAt).toBeGreaterThanOrEqual(slowAnswerMs);
    // Every attempt recorded the number it carried, the replayed round's as the first.
    for (const [deliveryId, sequence] of [
      [placed, 1],
      [confirmed, 2],
    ]) {
      const started = (await store.readStream(deliveryStream(deliveryId!))).filter(
        (event) => event.type === "AttemptStarted",
      );
      const recorded = started.map((event) => event.data as { round: number; sequence?: number });
      expect(new Set(recorded.map(({ round }) => round))).toEqual(new Set([0, 1]));
      expect(new Set(recorded.map((data) => data.sequence))).toEqual(new Set([sequence]));
    }
  });
});
