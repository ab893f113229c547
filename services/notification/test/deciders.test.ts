import { specFor } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import { type DeliveryEvent, deliveryDecider, OUTCOME_UNKNOWN } from "../src/domain/delivery.ts";
import { webhookEventDecider } from "../src/domain/event-mapping.ts";
import { checkReplayBound } from "../src/domain/replay.ts";
import {
  evolveHealth,
  type LiveWebhook,
  signingSecrets,
  type WebhookEvent,
  webhookDecider,
} from "../src/domain/webhook.ts";

const delays = [0, 60_000, 300_000, 1_800_000, 7_200_000, 43_200_000];
const retryAfterMaxMs = 3_600_000;
const t0 = "2026-03-01T10:00:00.000Z";
const plus = (ms: number) => new Date(Date.parse(t0) + ms).toISOString();

const facts = {
  deliveryId: 12,
  webhookId: 3,
  eventId: "evt_abc",
  eventType: "order.placed" as const,
  body: '{"id":"evt_abc"}',
  createdAt: t0,
};
const created: DeliveryEvent = { type: "DeliveryCreated", data: { ...facts, dueAt: t0 } };
const started = (attempt: number, at: string, round = 0): DeliveryEvent => ({
  type: "AttemptStarted",
  data: { round, attempt, startedAt: at },
});
const failedAt = (attempt: number, at: string, next: string | null, round = 0): DeliveryEvent => ({
  type: "AttemptFailed",
  data: {
    round,
    attempt,
    outcome: "failed",
    statusCode: 500,
    error: "receiver answered 500",
    durationMs: 5,
    finishedAt: at,
    nextAttemptAt: next,
  },
});
const fail500 = { ok: false, statusCode: 500, error: "receiver answered 500", durationMs: 5 };

/** Five failed attempts, the sixth started: the last one decides the dead letter queue. */
const sixthInFlight: DeliveryEvent[] = [
  created,
  ...[1, 2, 3, 4, 5].flatMap((n) => [started(n, plus(n)), failedAt(n, plus(n), plus(n + 1))]),
  started(6, plus(6)),
];

describe("delivery decider", () => {
  const given = specFor(deliveryDecider);

  it("schedules attempt 1 after the first delay, and creating twice does nothing", () => {
    given([])
      .when({ type: "Create", facts, delays: [250, 1000] })
      .thenEmits([{ type: "DeliveryCreated", data: { ...facts, dueAt: plus(250) } }]);
    given([created]).when({ type: "Create", facts, delays }).thenEmits([]);
  });

  it("claims the first attempt in the append that creates the delivery, when it is due by then", () => {
    given([])
      .when({ type: "Create", facts, delays, startAt: plus(1) })
      .thenEmits([created, started(1, plus(1))]);
    // Not due yet (a first delay): created only, claimed later as any other.
    given([])
      .when({ type: "Create", facts, delays: [250, 1000], startAt: plus(1) })
      .thenEmits([{ type: "DeliveryCreated", data: { ...facts, dueAt: plus(250) } }]);
    // Already created (the fan-out ran twice): nothing, no claim either.
    given([created])
      .when({ type: "Create", facts, delays, startAt: plus(1) })
      .thenEmits([]);
  });

  it("claims a due attempt once: a second claim of the same attempt is refused", () => {
    given([created])
      .when({ type: "StartAttempt", now: plus(1) })
      .thenEmits([started(1, plus(1))]);
    given([created, started(1, plus(1))])
      .when({ type: "StartAttempt", now: plus(2) })
      .thenRefuses({ body: { status: 409 } });
  });

  it("records the place its lane released it at on the attempt it claims, and none outside a lane", () => {
    given([created])
      .when({ type: "StartAttempt", now: plus(1), sequence: 7 })
      .thenEmits([
        { type: "AttemptStarted", data: { round: 0, attempt: 1, startedAt: plus(1), sequence: 7 } },
      ]);
    given([created])
      .when({ type: "StartAttempt", now: plus(1) })
      .thenEmits([{ type: "AttemptStarted", data: { round: 0, attempt: 1, startedAt: plus(1) } }]);
  });

  it("does not start an attempt before it is due", () => {
    given([created, started(1, t0), failedAt(1, t0, plus(60_000))])
      .when({ type: "StartAttempt", now: plus(59_999) })
      .thenRefuses({ body: { status: 409 } });
  });

  it("records a 2xx as delivered", () => {
    given([created, started(1, t0)])
      .when({
        type: "RecordResult",
        round: 0,
        attempt: 1,
        result: { ok: true, statusCode: 204, error: null, durationMs: 12 },
        now: plus(12),
        delays,
        retryAfterMaxMs,
      })
      .thenEmits([
        {
          type: "AttemptSucceeded",
          data: { round: 0, attempt: 1, statusCode: 204, durationMs: 12, finishedAt: plus(12) },
        },
      ]);
  });

  it("schedules the next attempt after the delay of the retry table", () => {
    given([created, started(1, t0), failedAt(1, t0, plus(60_000)), started(2, plus(60_000))])
      .when({
        type: "RecordResult",
        round: 0,
        attempt: 2,
        result: fail500,
        now: plus(60_005),
        delays,
        retryAfterMaxMs,
      })
      .thenEmits([failedAt(2, plus(60_005), plus(60_005 + 300_000))]);
  });

  it("dead-letters the delivery after the 6th failure", () => {
    given(sixthInFlight)
      .when({
        type: "RecordResult",
        round: 0,
        attempt: 6,
        result: fail500,
        now: plus(7),
        delays,
        retryAfterMaxMs,
      })
      .thenEmits([
        failedAt(6, plus(7), null),
        { type: "DeliveryDeadLettered", data: { round: 0, at: plus(7) } },
      ]);
  });

  describe("a receiver steers with its answer", () => {
    const secondInFlight = [created, started(1, t0), failedAt(1, t0, plus(1)), started(2, plus(1))];
    const now = plus(60_005);
    const answer = (statusCode: number, headers: { retryAfter?: string; webhookDelivery?: string }) => ({
      ok: false,
      statusCode,
      error: `receiver answered ${statusCode}`,
      durationMs: 5,
      ...headers,
    });
    const record = (result: ReturnType<typeof answer>, cap = retryAfterMaxMs) =>
      given(secondInFlight).when({
        type: "RecordResult",
        round: 0,
        attempt: 2,
        result,
        now,
        delays,
        retryAfterMaxMs: cap,
      });
    const failedWith = (
      statusCode: number,
      nextAttemptAt: string | null,
      asked: { retryAfter?: string; steer?: "gone" | "disable" | "abort" },
    ): DeliveryEvent => ({
      type: "AttemptFailed",
      data: {
        round: 0,
        attempt: 2,
        outcome: "failed",
        statusCode,
        error: `receiver answered ${statusCode}`,
        durationMs: 5,
        finishedAt: now,
        nextAttemptAt,
        ...asked,
      },
    });
    const at = (ms: number) => new Date(Date.parse(now) + ms).toISOString();

    it("a 503 with Retry-After in seconds defers the next attempt past the schedule's delay", () => {
      record(answer(503, { retryAfter: "900" })).thenEmits([
        failedWith(503, at(900_000), { retryAfter: at(900_000) }),
      ]);
    });

    it("a 429 with an HTTP date defers the next attempt to that date", () => {
      const date = new Date(Date.parse(now) + 1_200_000).toUTCString(); // whole seconds
      const asked = new Date(Date.parse(date)).toISOString();
      record(answer(429, { retryAfter: date })).thenEmits([failedWith(429, asked, { retryAfter: asked })]);
    });

    it("never brings the next attempt before the schedule's own delay", () => {
      // The schedule waits 300 s before attempt 3; the receiver asks for 2 s.
      record(answer(503, { retryAfter: "2" })).thenEmits([
        failedWith(503, at(300_000), { retryAfter: at(2_000) }),
      ]);
    });

    it("defers at most WEBHOOK_RETRY_AFTER_MAX", () => {
      record(answer(503, { retryAfter: "86400" }), 3_600_000).thenEmits([
        failedWith(503, at(3_600_000), { retryAfter: at(86_400_000) }),
      ]);
    });

    it("ignores Retry-After on other statuses, and one that does not parse", () => {
      record(answer(500, { retryAfter: "900" })).thenEmits([failedWith(500, at(300_000), {})]);
      record(answer(503, { retryAfter: "soon" })).thenEmits([failedWith(503, at(300_000), {})]);
    });

    it("a 410 Gone and webhook-delivery: disable are recorded as asking to disable; the schedule goes on", () => {
      record(answer(410, {})).thenEmits([failedWith(410, at(300_000), { steer: "gone" })]);
      record(answer(500, { webhookDelivery: " Disable " })).thenEmits([
        failedWith(500, at(300_000), { steer: "disable" }),
      ]);
    });

    it("webhook-delivery: abort dead-letters the delivery without further attempts", () => {
      record(answer(500, { webhookDelivery: "abort" })).thenEmits([
        failedWith(500, null, { steer: "abort" }),
        { type: "DeliveryDeadLettered", data: { round: 0, at: now } },
      ]);
    });

    it("a 2xx delivers whatever its headers ask", () => {
      given(secondInFlight)
        .when({
          type: "RecordResult",
          round: 0,
          attempt: 2,
          result: { ok: true, statusCode: 200, error: null, durationMs: 5, webhookDelivery: "abort" },
          now,
          delays,
          retryAfterMaxMs,
        })
        .thenEmits([
          {
            type: "AttemptSucceeded",
            data: { round: 0, attempt: 2, statusCode: 200, durationMs: 5, finishedAt: now },
          },
        ]);
    });
  });

  it("refuses a result for an attempt that is no longer in flight", () => {
    given([created, started(1, t0), failedAt(1, t0, plus(60_000))])
      .when({
        type: "RecordResult",
        round: 0,
        attempt: 1,
        result: fail500,
        now: plus(3),
        delays,
        retryAfterMaxMs,
      })
      .thenRefuses({ body: { status: 409 } });
  });

  it("records an attempt whose process died as failed with an unknown outcome once the lease is over", () => {
    given([created, started(1, t0)])
      .when({ type: "Abandon", now: plus(14_999), leaseMs: 15_000, delays })
      .thenRefuses({ body: { status: 409 } });
    given([created, started(1, t0)])
      .when({ type: "Abandon", now: plus(15_000), leaseMs: 15_000, delays })
      .thenEmits([
        {
          type: "AttemptFailed",
          data: {
            round: 0,
            attempt: 1,
            outcome: "unknown",
            statusCode: null,
            error: OUTCOME_UNKNOWN,
            durationMs: null,
            finishedAt: plus(15_000),
            nextAttemptAt: plus(15_000 + 60_000),
          },
        },
      ]);
  });

  it("takes back a claimed attempt unsent, due again at once, counting for nothing", () => {
    const withdrawn: DeliveryEvent = {
      type: "AttemptWithdrawn",
      data: { round: 0, attempt: 1, at: plus(2), reason: "webhook paused" },
    };
    given([created, started(1, plus(1))])
      .when({ type: "Withdraw", round: 0, attempt: 1, now: plus(2), reason: "webhook paused" })
      .thenEmits([withdrawn]);
    given([created, started(1, plus(1)), withdrawn])
      .when({ type: "StartAttempt", now: plus(3) })
      .thenEmits([started(1, plus(3))]);
    given([created, started(1, plus(1)), failedAt(1, plus(1), plus(60_000))])
      .when({ type: "Withdraw", round: 0, attempt: 1, now: plus(2), reason: "webhook paused" })
      .thenRefuses({ body: { status: 409 } });
  });

  it("replays a dead-lettered delivery from attempt 1 of a new round", () => {
    const dead = [
      ...sixthInFlight,
      failedAt(6, plus(7), null),
      { type: "DeliveryDeadLettered", data: { round: 0, at: plus(7) } } as DeliveryEvent,
    ];
    given(dead)
      .when({ type: "Replay", now: plus(9), statuses: ["dead_lettered"], round: 0 })
      .thenEmits([{ type: "DeliveryReplayed", data: { round: 1, at: plus(9), dueAt: plus(9) } }]);
    given([...dead, { type: "DeliveryReplayed", data: { round: 1, at: plus(9), dueAt: plus(9) } }])
      .when({ type: "StartAttempt", now: plus(10) })
      .thenEmits([started(1, plus(10), 1)]);
  });

  it("replays only finished deliveries in the statuses asked for", () => {
    given([created])
      .when({ type: "Replay", now: plus(1), statuses: ["dead_lettered", "delivered"], round: 0 })
      .thenEmits([]);
    const delivered: DeliveryEvent[] = [
      created,
      started(1, t0),
      {
        type: "AttemptSucceeded",
        data: { round: 0, attempt: 1, statusCode: 200, durationMs: 1, finishedAt: t0 },
      },
    ];
    given(delivered)
      .when({ type: "Replay", now: plus(2), statuses: ["dead_lettered"], round: 0 })
      .thenEmits([]);
    given(delivered)
      .when({ type: "Replay", now: plus(2), statuses: ["delivered"], round: 0 })
      .thenEmits([{ type: "DeliveryReplayed", data: { round: 1, at: plus(2), dueAt: plus(2) } }]);
    // A second replay racing the first finds the delivery waiting again and leaves it alone.
    given([...delivered, { type: "DeliveryReplayed", data: { round: 1, at: plus(2), dueAt: plus(2) } }])
      .when({ type: "Replay", now: plus(2), statuses: ["delivered"], round: 0 })
      .thenEmits([]);
  });

  it("starts a delivery once for two replays that found it in the same round, however late the second", () => {
    const deliveredIn = (round: number): DeliveryEvent[] => [
      started(1, plus(3), round),
      {
        type: "AttemptSucceeded",
        data: { round, attempt: 1, statusCode: 200, durationMs: 1, finishedAt: plus(3) },
      },
    ];
    const delivered: DeliveryEvent[] = [created, ...deliveredIn(0)];
    const replayedAndDeliveredAgain: DeliveryEvent[] = [
      ...delivered,
      { type: "DeliveryReplayed", data: { round: 1, at: plus(2), dueAt: plus(2) } },
      ...deliveredIn(1),
    ];
    // The second replay read round 0 finished; by the time it acts, the first one's round 1 has
    // been delivered too. Replaying again would be a second attempt series nobody asked for.
    given(replayedAndDeliveredAgain)
      .when({ type: "Replay", now: plus(4), statuses: ["delivered"], round: 0 })
      .thenEmits([]);
    // A later replay that found round 1 finished starts round 2.
    given(replayedAndDeliveredAgain)
      .when({ type: "Replay", now: plus(4), statuses: ["delivered"], round: 1 })
      .thenEmits([{ type: "DeliveryReplayed", data: { round: 2, at: plus(4), dueAt: plus(4) } }]);
  });

  it("cancels a waiting delivery, but not a delivered one", () => {
    given([created])
      .when({ type: "Cancel", now: plus(1), reason: "webhook deleted" })
      .thenEmits([{ type: "DeliveryCancelled", data: { reason: "webhook deleted", at: plus(1) } }]);
    given([
      created,
      started(1, t0),
      {
        type: "AttemptSucceeded",
        data: { round: 0, attempt: 1, statusCode: 200, durationMs: 1, finishedAt: t0 },
      },
    ])
      .when({ type: "Cancel", now: plus(1), reason: "webhook deleted" })
      .thenEmits([]);
  });
});

describe("delivery decider: what the operator sees and resends", () => {
  const given = specFor(deliveryDecider);
  const request = {
    url: "https://hooks.example.com/in",
    headers: { "webhook-id": "evt_abc", authorization: "[redacted]" },
  };
  const response = {
    headers: { "content-type": "text/plain" },
    body: "database is down",
    bodyTruncated: false,
  };

  it("records the request and the receiver's answer with the attempt's result", () => {
    given([created, started(1, t0)])
      .when({
        type: "RecordResult",
        round: 0,
        attempt: 1,
        result: { ...fail500, request, response },
        now: plus(5),
        delays,
        retryAfterMaxMs,
      })
      .thenEmits([
        {
          ...failedAt(1, plus(5), plus(60_005)),
          data: { ...failedAt(1, plus(5), plus(60_005)).data, request, response },
        } as DeliveryEvent,
      ]);
    given([created, started(1, t0)])
      .when({
        type: "RecordResult",
        round: 0,
        attempt: 1,
        result: { ok: true, statusCode: 200, error: null, durationMs: 3, request, response },
        now: plus(3),
        delays,
        retryAfterMaxMs,
      })
      .thenEmits([
        {
          type: "AttemptSucceeded",
          data: {
            round: 0,
            attempt: 1,
            statusCode: 200,
            durationMs: 3,
            finishedAt: plus(3),
            request,
            response,
          },
        },
      ]);
  });

  it("resends a delivered or dead-lettered delivery as a new round", () => {
    const delivered: DeliveryEvent[] = [
      created,
      started(1, t0),
      {
        type: "AttemptSucceeded",
        data: { round: 0, attempt: 1, statusCode: 200, durationMs: 3, finishedAt: plus(1) },
      },
    ];
    given(delivered)
      .when({ type: "Resend", now: plus(9) })
      .thenEmits([{ type: "DeliveryReplayed", data: { round: 1, at: plus(9), dueAt: plus(9) } }]);
    const dead = [
      ...sixthInFlight,
      failedAt(6, plus(7), null),
      { type: "DeliveryDeadLettered", data: { round: 0, at: plus(7) } } as DeliveryEvent,
    ];
    given(dead)
      .when({ type: "Resend", now: plus(9) })
      .thenEmits([{ type: "DeliveryReplayed", data: { round: 1, at: plus(9), dueAt: plus(9) } }]);
  });

  it("refuses to resend a delivery still on its way or cancelled (409), and an unknown one (404)", () => {
    for (const history of [
      [created],
      [created, started(1, t0)],
      [created, started(1, t0), failedAt(1, t0, plus(60_000))],
      [
        created,
        { type: "DeliveryCancelled", data: { reason: "webhook deleted", at: plus(1) } } as DeliveryEvent,
      ],
    ]) {
      given(history)
        .when({ type: "Resend", now: plus(9) })
        .thenRefuses({ body: { status: 409 } });
    }
    given([])
      .when({ type: "Resend", now: plus(9) })
      .thenRefuses({ body: { status: 404 } });
  });
});

describe("webhook decider", () => {
  const given = specFor(webhookDecider);
  const registration = {
    webhookId: 3,
    url: "https://hooks.example.com/",
    events: ["order.placed" as const],
    description: null,
    secret: { alg: "A256GCM" as const, iv: "aXY=", tag: "dGFn", data: "ZGF0YQ==" },
    signatureAlgorithms: ["hmac-sha256" as const],
    createdAt: t0,
  };

  it("registers once", () => {
    given([])
      .when({ type: "Register", registration })
      .thenEmits([{ type: "WebhookRegistered", data: registration }]);
    given([{ type: "WebhookRegistered", data: registration }])
      .when({ type: "Register", registration })
      .thenRefuses({ body: { status: 409 } });
  });

  const registered: WebhookEvent = { type: "WebhookRegistered", data: registration };
  const day = 24 * 3_600_000;
  const newSecret = { alg: "A256GCM" as const, iv: "bmV3", tag: "dGFn", data: "bmV3" };

  it("records only the fields a change really changes", () => {
    given([registered])
      .when({
        type: "Update",
        webhookId: 3,
        changes: { url: "https://other.example.com/", events: ["order.placed"], description: null },
        now: plus(1),
      })
      .thenEmits([
        {
          type: "WebhookUpdated",
          data: { webhookId: 3, url: "https://other.example.com/", updatedAt: plus(1) },
        },
      ]);
    given([registered])
      .when({
        type: "Update",
        webhookId: 3,
        changes: { events: ["order.placed", "order.placed"] },
        now: plus(1),
      })
      .thenEmits([]);
    given([registered])
      .when({
        type: "Update",
        webhookId: 3,
        changes: { events: ["order.shipped", "order.placed"] },
        now: plus(1),
      })
      .thenEmits([
        {
          type: "WebhookUpdated",
          data: { webhookId: 3, events: ["order.shipped", "order.placed"], updatedAt: plus(1) },
        },
      ]);
  });

  it("pauses an active registration and resumes it; repeating either changes nothing", () => {
    const paused: WebhookEvent = {
      type: "WebhookPaused",
      data: { webhookId: 3, at: plus(1), reason: "paused by an operator" },
    };
    given([registered])
      .when({ type: "Pause", webhookId: 3, now: plus(1) })
      .thenEmits([paused]);
    given([registered, paused])
      .when({ type: "Pause", webhookId: 3, now: plus(2) })
      .thenEmits([]);
    given([registered, paused])
      .when({ type: "Resume", webhookId: 3, now: plus(3) })
      .thenEmits([{ type: "WebhookResumed", data: { webhookId: 3, at: plus(3) } }]);
    given([registered])
      .when({ type: "Resume", webhookId: 3, now: plus(3) })
      .thenEmits([]);
    given([])
      .when({ type: "Pause", webhookId: 3, now: plus(1) })
      .thenRefuses({ body: { status: 404 } });
  });

  it("rotates the secret, keeping the replaced one for the overlap, at most 7 days", () => {
    const rotated: WebhookEvent = {
      type: "WebhookSecretRotated",
      data: {
        webhookId: 3,
        at: plus(0),
        secret: newSecret,
        previousSecret: registration.secret,
        previousExpiresAt: plus(day),
      },
    };
    given([registered])
      .when({ type: "RotateSecret", webhookId: 3, secret: newSecret, overlapMs: day, now: t0 })
      .thenEmits([rotated]);
    given([registered])
      .when({ type: "RotateSecret", webhookId: 3, secret: newSecret, overlapMs: 7 * day + 1, now: t0 })
      .thenRefuses({ body: { status: 422 } });

    const state = [registered, rotated].reduce(
      webhookDecider.evolve,
      webhookDecider.initialState(),
    ) as LiveWebhook;
    expect(signingSecrets(state, plus(day - 1))).toEqual([newSecret, registration.secret]);
    expect(signingSecrets(state, plus(day))).toEqual([newSecret]);
  });

  it("disables an active registration only once its attempts have failed for the whole period", () => {
    const afterMs = 5 * day;
    given([registered])
      .when({ type: "Disable", webhookId: 3, failingSince: t0, afterMs, now: plus(afterMs - 1) })
      .thenEmits([]);
    given([registered])
      .when({ type: "Disable", webhookId: 3, failingSince: t0, afterMs, now: plus(afterMs) })
      .thenEmits([
        {
          type: "WebhookDisabled",
          data: {
            webhookId: 3,
            at: plus(afterMs),
            failingSince: t0,
            reason: `every delivery attempt failed from ${t0} to ${plus(afterMs)}`,
          },
        },
      ]);
    // Failures from before it was resumed do not count.
    given([
      registered,
      { type: "WebhookPaused", data: { webhookId: 3, at: plus(1), reason: "paused by an operator" } },
      { type: "WebhookResumed", data: { webhookId: 3, at: plus(day) } },
    ])
      .when({ type: "Disable", webhookId: 3, failingSince: t0, afterMs, now: plus(afterMs) })
      .thenEmits([]);
  });

  it("disables an active registration at once when its receiver asks (410 Gone, webhook-delivery: disable)", () => {
    const ask = (steer: "gone" | "disable", now: string) =>
      ({ type: "DisableAsAsked", webhookId: 3, steer, failingSince: t0, now }) as const;
    given([registered])
      .when(ask("gone", plus(5)))
      .thenEmits([
        {
          type: "WebhookDisabled",
          data: {
            webhookId: 3,
            at: plus(5),
            failingSince: t0,
            reason: `the receiver answered 410 Gone at ${plus(5)}`,
          },
        },
      ]);
    given([registered])
      .when(ask("disable", plus(5)))
      .thenEmits([
        {
          type: "WebhookDisabled",
          data: {
            webhookId: 3,
            at: plus(5),
            failingSince: t0,
            reason: `the receiver asked to be disabled (webhook-delivery: disable) at ${plus(5)}`,
          },
        },
      ]);
    // Paused, already disabled, or an answer from before it was resumed: nothing to do.
    const paused: WebhookEvent = {
      type: "WebhookPaused",
      data: { webhookId: 3, at: plus(1), reason: "paused by an operator" },
    };
    given([registered, paused])
      .when(ask("gone", plus(5)))
      .thenEmits([]);
    given([registered, paused, { type: "WebhookResumed", data: { webhookId: 3, at: plus(day) } }])
      .when(ask("gone", plus(5)))
      .thenEmits([]);
  });

  it("follows health: the first failure after a success starts the failing run, a success ends it", () => {
    const failure = (at: string) => ({ type: "AttemptFailed" as const, data: { finishedAt: at } });
    let health = evolveHealth({ failingSince: null }, failure(plus(1)));
    health = evolveHealth(health, failure(plus(2)));
    expect(health).toEqual({ failingSince: plus(1) });
    expect(evolveHealth(health, { type: "AttemptSucceeded" })).toEqual({ failingSince: null });
    expect(evolveHealth(health, { type: "WebhookResumed" })).toEqual({ failingSince: null });
  });

  it("deletes an active registration; deleting an unknown or deleted one is 404", () => {
    given([{ type: "WebhookRegistered", data: registration }])
      .when({ type: "Delete", webhookId: 3, now: t0 })
      .thenEmits([{ type: "WebhookDeleted", data: { webhookId: 3, deletedAt: t0 } }]);
    given([])
      .when({ type: "Delete", webhookId: 3, now: t0 })
      .thenRefuses({ body: { status: 404 } });
    given([
      { type: "WebhookRegistered", data: registration },
      { type: "WebhookDeleted", data: { webhookId: 3, deletedAt: t0 } },
    ])
      .when({ type: "Delete", webhookId: 3, now: t0 })
      .thenRefuses({ body: { status: 404 } });
  });
});

describe("replay bound", () => {
  it("refuses a replay matching more deliveries than one call may start, saying how many", () => {
    expect(() => checkReplayBound(1000, 1000)).not.toThrow();
    let thrown: unknown;
    try {
      checkReplayBound(1001, 1000);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({
      body: {
        status: 422,
        errors: [{ field: "since", message: expect.stringContaining("1001 deliveries match") }],
      },
    });
  });
});

describe("webhook event record", () => {
  const given = specFor(webhookEventDecider);
  const plan = {
    eventId: "evt_1",
    type: "order.placed" as const,
    createdAt: t0,
    body: "{}",
    deliveries: [{ webhookId: 1, deliveryId: 5 }],
  };

  it("keeps the first plan when the same event is recorded again", () => {
    given([])
      .when({ type: "Record", event: plan })
      .thenEmits([{ type: "WebhookEventRecorded", data: plan }]);
    given([{ type: "WebhookEventRecorded", data: plan }])
      .when({ type: "Record", event: { ...plan, deliveries: [{ webhookId: 1, deliveryId: 9 }] } })
      .thenEmits([]);
  });
});
