import { specFor } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import { aggregateOf, type LaneEvent, laneDecider, laneHead, laneStream } from "../src/domain/lane.ts";
import { webhookDecider } from "../src/domain/webhook.ts";

const lane = specFor(laneDecider);
const t0 = "2026-03-01T10:00:00.000Z";
const t1 = "2026-03-01T10:00:05.000Z";

const joined = (deliveryId: number, createdAt: string, revision?: number): LaneEvent => ({
  type: "LaneJoined",
  data: { deliveryId, createdAt, ...(revision !== undefined ? { revision } : {}) },
});
const released = (deliveryId: number, sequence: number): LaneEvent => ({
  type: "LaneReleased",
  data: { deliveryId, sequence },
});
const finished = (deliveryId: number): LaneEvent => ({ type: "LaneEntryFinished", data: { deliveryId } });
const reopened = (deliveryId: number, round: number): LaneEvent => ({
  type: "LaneEntryReopened",
  data: { deliveryId, round },
});

describe("ordered lane decider", () => {
  it("releases the first event of an aggregate with sequence 1, and the next only once it is finished", () => {
    lane([joined(10, t0, 1), joined(11, t1, 2)])
      .when({ type: "Release", deliveryId: 10 })
      .thenEmits([released(10, 1)]);
    lane([joined(10, t0, 1), joined(11, t1, 2), released(10, 1)])
      .when({ type: "Release", deliveryId: 11 })
      .thenRefuses({ body: { status: 409, message: "delivery 11 waits for delivery 10 in its lane" } });
    lane([joined(10, t0, 1), joined(11, t1, 2), released(10, 1), finished(10)])
      .when({ type: "Release", deliveryId: 11 })
      .thenEmits([released(11, 2)]);
  });

  it("lets the head's retries go without a new sequence", () => {
    lane([joined(10, t0), released(10, 1)])
      .when({ type: "Release", deliveryId: 10 })
      .thenEmits([]);
  });

  it("orders by the aggregate's revision where publish times tie or disagree, not by arrival", () => {
    // The later event (revision 5) was recorded first; the earlier one (revision 4) goes first.
    lane([joined(21, t1, 5), joined(20, t1, 4)])
      .when({ type: "Release", deliveryId: 21 })
      .thenRefuses({ body: { status: 409 } });
    lane([joined(21, t1, 5), joined(20, t1, 4)])
      .when({ type: "Release", deliveryId: 20 })
      .thenEmits([released(20, 1)]);
    // Without revisions: the publish time, then the delivery id.
    expect(laneHead(laneDecider.evolve(laneDecider.initialState(), joined(31, t1)))?.deliveryId).toBe(31);
    const state = [joined(31, t1), joined(30, t0), joined(29, t1)].reduce(
      laneDecider.evolve,
      laneDecider.initialState(),
    );
    expect(laneHead(state)?.deliveryId).toBe(30);
  });

  it("keeps a released delivery ahead of an earlier event recorded after it was released", () => {
    lane([joined(11, t1, 2), released(11, 1), joined(10, t0, 1)])
      .when({ type: "Release", deliveryId: 10 })
      .thenRefuses({ body: { status: 409 } });
    lane([joined(11, t1, 2), released(11, 1), joined(10, t0, 1), finished(11)])
      .when({ type: "Release", deliveryId: 10 })
      .thenEmits([released(10, 2)]);
  });

  it("refuses a delivery not yet joined (404) or finished (409)", () => {
    lane([])
      .when({ type: "Release", deliveryId: 9 })
      .thenRefuses({ body: { status: 404 } });
    lane([joined(9, t0), released(9, 1), finished(9)])
      .when({ type: "Release", deliveryId: 9 })
      .thenRefuses({ body: { status: 409 } });
  });

  it("joins, finishes and reopens once, whatever the repeats (every replica follows the same events)", () => {
    lane([joined(9, t0)])
      .when({ type: "Join", deliveryId: 9, createdAt: t0 })
      .thenEmits([]);
    lane([joined(9, t0), released(9, 1), finished(9)])
      .when({ type: "Finish", deliveryId: 9 })
      .thenEmits([]);
    lane([joined(9, t0), released(9, 1), finished(9), reopened(9, 1)])
      .when({ type: "Reopen", deliveryId: 9, round: 1 })
      .thenEmits([]);
  });

  it("goes by the delivery's round: old word about a round the lane is past changes nothing", () => {
    // A replica reading history again: round 1's replay was already reopened and finished.
    const replayedAndDone = [joined(9, t0), released(9, 1), finished(9), reopened(9, 1), finished(9)];
    lane(replayedAndDone).when({ type: "Reopen", deliveryId: 9, round: 1 }).thenEmits([]);
    // Round 0's end, heard while round 1 is on its way, does not end round 1.
    lane([joined(9, t0), released(9, 1), finished(9), reopened(9, 1)])
      .when({ type: "Finish", deliveryId: 9, round: 0 })
      .thenEmits([]);
    lane([joined(9, t0), released(9, 1), finished(9), reopened(9, 1)])
      .when({ type: "Finish", deliveryId: 9, round: 1 })
      .thenEmits([finished(9)]);
    // A cancellation ends it whatever its round; a resend opens round 2.
    lane([joined(9, t0), released(9, 1), finished(9), reopened(9, 1)])
      .when({ type: "Finish", deliveryId: 9 })
      .thenEmits([finished(9)]);
    lane(replayedAndDone)
      .when({ type: "Reopen", deliveryId: 9, round: 2 })
      .thenEmits([reopened(9, 2)]);
  });

  it("replays in lane order: reopened deliveries go by the sequence they kept, before later ones", () => {
    const given = [
      joined(1, t0, 1),
      joined(2, t0, 2),
      released(1, 1),
      finished(1), // dead-lettered
      released(2, 2),
      finished(2), // dead-lettered
      joined(3, t1, 3),
      reopened(2, 1),
      reopened(1, 1),
    ];
    lane(given)
      .when({ type: "Release", deliveryId: 2 })
      .thenRefuses({ body: { status: 409 } });
    lane(given)
      .when({ type: "Release", deliveryId: 3 })
      .thenRefuses({ body: { status: 409 } });
    lane(given).when({ type: "Release", deliveryId: 1 }).thenEmits([]);
    lane([...given, finished(1)])
      .when({ type: "Release", deliveryId: 2 })
      .thenEmits([]);
    lane([...given, finished(1), finished(2)])
      .when({ type: "Release", deliveryId: 3 })
      .thenEmits([released(3, 3)]);
  });

  it("names one lane per registration and aggregate: an order, a cheese, a customer, an API key", () => {
    expect(laneStream(3, aggregateOf("order.placed", { order_id: "7" })!)).toBe("webhooklane-3:order-7");
    expect(aggregateOf("order.shipped", { order_id: "7" })).toBe("order-7");
    expect(aggregateOf("cheese.low_stock", { cheese_id: "4" })).toBe("cheese-4");
    expect(aggregateOf("customer.subscription_changed", { customer_id: "12" })).toBe("customer-12");
    expect(aggregateOf("api_key.expiring", { customer_id: "12", key_id: "5" })).toBe("apikey-5");
    expect(aggregateOf("webhook.disabled", { webhook_id: "2" })).toBe("webhook-2");
    expect(aggregateOf("webhook.test", { webhook_id: "2" })).toBeUndefined();
  });
});

describe("webhook decider: ordered", () => {
  const registration = {
    webhookId: 3,
    url: "https://example.com/hooks",
    events: ["order.placed" as const],
    description: null,
    secret: { alg: "A256GCM" as const, iv: "iv", tag: "tag", data: "sealed" },
    signatureAlgorithms: ["hmac-sha256" as const],
    createdAt: t0,
  };
  const registered = { type: "WebhookRegistered" as const, data: registration };

  it("turns ordering on and off by PATCH; a registration made before lanes existed is not ordered", () => {
    specFor(webhookDecider)([registered])
      .when({ type: "Update", webhookId: 3, changes: { ordered: false }, now: t1 })
      .thenEmits([]);
    specFor(webhookDecider)([registered])
      .when({ type: "Update", webhookId: 3, changes: { ordered: true }, now: t1 })
      .thenEmits([{ type: "WebhookUpdated", data: { webhookId: 3, ordered: true, updatedAt: t1 } }]);
  });
});
