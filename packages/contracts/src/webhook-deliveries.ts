// A registration's deliveries as the API answers them: their statuses, each attempt with its
// request and answer, a resend's and a test event's result, the list and its query.
import { z } from "@hono/zod-openapi";
import { dateTime, int64Id, pathId } from "./fields.ts";
import { pageQuery } from "./paging.ts";
import { WebhookEventKind, WebhookIdParam, webhookEventKinds } from "./webhook.ts";

export const deliveryStatuses = [
  "pending",
  "attempting",
  "retry_scheduled",
  "delivered",
  "dead_lettered",
  "cancelled",
] as const;
export const DeliveryStatus = z.enum(deliveryStatuses).openapi({
  description:
    "pending: waiting for attempt 1; attempting: an attempt in flight; retry_scheduled: failed, next attempt at nextAttemptAt; delivered: a 2xx arrived; dead_lettered: every attempt failed (replayable); cancelled: the registration was deleted",
});
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

export const DeliveryAttempt = z
  .object({
    attempt: z.number().int().min(1).openapi({ description: "1 to 6 within its round" }),
    round: z
      .number()
      .int()
      .min(0)
      .openapi({ description: "0 for the original schedule, n after the nth replay" }),
    startedAt: dateTime,
    sequence: z.number().int().min(1).optional().openapi({
      description:
        "for a registration with ordered lanes: the delivery's place in its lane, sent as X-Cheese-Sequence with this attempt (every attempt of the delivery carries the same, replays too); absent outside a lane and in attempts recorded before it was kept",
    }),
    outcome: z.enum(["succeeded", "failed", "unknown", "in_flight"]).openapi({
      description: "unknown: the notification process stopped during the attempt; it counts as failed",
    }),
    statusCode: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "the receiver's HTTP status, if it answered" }),
    error: z.string().nullable().openapi({ description: "why the attempt failed without a 2xx" }),
    durationMs: z.number().int().min(0).nullable(),
    retryAfter: dateTime.optional().openapi({
      description:
        "the receiver answered 429 or 503 with Retry-After: the time it asked the next attempt not to come before (the next attempt waits for it, at most WEBHOOK_RETRY_AFTER_MAX, and never less than the retry table's delay)",
    }),
    steer: z.enum(["gone", "disable", "abort"]).optional().openapi({
      description:
        "what the receiver asked with its answer: gone (410 Gone) and disable (webhook-delivery: disable) disabled the registration; abort (webhook-delivery: abort) dead-lettered the delivery without further attempts",
    }),
  })
  .openapi("DeliveryAttempt");
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

export const Delivery = z
  .object({
    id: int64Id.openapi({ description: "sent as X-Cheese-Delivery" }),
    webhookId: int64Id,
    eventId: z
      .string()
      .openapi({ description: "the envelope id, sent as webhook-id; the same in every attempt and replay" }),
    eventType: WebhookEventKind,
    status: DeliveryStatus,
    deadLettered: z.boolean().openapi({ description: "true while the delivery is in the dead letter queue" }),
    attempts: z.array(DeliveryAttempt).openapi({ description: "every attempt, oldest first" }),
    nextAttemptAt: dateTime.nullable(),
    createdAt: dateTime,
    updatedAt: dateTime,
  })
  .openapi("Delivery");
export type Delivery = z.infer<typeof Delivery>;

/** How many bytes of a receiver's answer body are kept per attempt. */
export const ANSWER_BODY_MAX_BYTES = 4096;

export const AttemptRequest = z
  .object({
    url: z.string().openapi({ description: "where the attempt was sent (the registration's URL then)" }),
    headers: z.record(z.string(), z.string()).openapi({
      description:
        "every request header as sent, signatures included; the value of a receiver credential (Authorization, Cookie, a registration's auth headers) is shown as [redacted]",
    }),
  })
  .openapi("AttemptRequest");
export type AttemptRequest = z.infer<typeof AttemptRequest>;

export const AttemptAnswer = z
  .object({
    headers: z.record(z.string(), z.string()).openapi({ description: "the receiver's response headers" }),
    body: z.string().openapi({
      description: `the first ${ANSWER_BODY_MAX_BYTES} bytes of the receiver's response body, as UTF-8 text`,
    }),
    bodyTruncated: z
      .boolean()
      .openapi({ description: `true when the body was longer than ${ANSWER_BODY_MAX_BYTES} bytes` }),
  })
  .openapi("AttemptAnswer");
export type AttemptAnswer = z.infer<typeof AttemptAnswer>;

export const DeliveryAttemptDetail = z
  .object({
    ...DeliveryAttempt.shape,
    request: z.union([AttemptRequest, z.null()]).openapi({
      description: "null while in flight, or when the process stopped during the attempt",
    }),
    response: z.union([AttemptAnswer, z.null()]).openapi({
      description: "the receiver's answer; null when none came (see error: time-out, connection refused…)",
    }),
  })
  .openapi("DeliveryAttemptDetail");
export type DeliveryAttemptDetail = z.infer<typeof DeliveryAttemptDetail>;

export const DeliveryDetail = z
  .object({
    ...Delivery.shape,
    body: z.string().openapi({
      description:
        "the request body every attempt sent: the event envelope, byte for byte (stored once per delivery)",
    }),
    attempts: z
      .array(DeliveryAttemptDetail)
      .openapi({ description: "every attempt, oldest first, with its request and the receiver's answer" }),
  })
  .openapi("DeliveryDetail");
export type DeliveryDetail = z.infer<typeof DeliveryDetail>;

export const ResendResult = z
  .object({
    deliveryId: int64Id,
    round: z.number().int().min(1).openapi({ description: "the round of attempts the resend started" }),
  })
  .openapi("ResendResult");

/** POST /webhooks/{id}/test: the delivery that carries the test event. */
export const TestEventSent = z.object({ deliveryId: z.number().int().openapi({ format: "int64" }) });

export const DeliveryList = z
  .object({
    items: z.array(Delivery).openapi({ description: "newest first" }),
    nextCursor: z.string().nullable(),
    hasMore: z.boolean(),
  })
  .openapi("DeliveryList");

// ---- Path and query parameters of /webhooks/{id}/deliveries ----

export const DeliveryIdParam = WebhookIdParam.extend({
  deliveryId: pathId("deliveryId"),
});

/** A query value of several items, comma-separated (`a,b`), as the items; absent stays absent. */
const commaSeparated = (value: unknown) =>
  value === undefined
    ? undefined
    : String(value)
        .split(",")
        .map((part) => part.trim());

export const DeliveryListQuery = z.object({
  ...pageQuery,
  type: z.preprocess(commaSeparated, z.array(WebhookEventKind).min(1).optional()).openapi({
    param: { name: "type", in: "query", style: "form", explode: false },
    type: "array",
    items: { type: "string", enum: [...webhookEventKinds] },
    description: "only deliveries of these event kinds, comma-separated",
  }),
  status: z.preprocess(commaSeparated, z.array(DeliveryStatus).min(1).optional()).openapi({
    param: { name: "status", in: "query", style: "form", explode: false },
    type: "array",
    items: { type: "string", enum: [...deliveryStatuses] },
    description:
      "only deliveries in these statuses, comma-separated (dead_lettered lists the dead letter queue)",
  }),
});
