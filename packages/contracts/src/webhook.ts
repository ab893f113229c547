import { z } from "@hono/zod-openapi";
import { pageQuery } from "./paging.ts";
import { httpUrl } from "./urls.ts";

/** The spec's event kinds (Events part) and our webhook.disabled: the only values `events` may hold. */
export const webhookEventKinds = [
  "order.placed",
  "order.confirmed",
  "order.shipped",
  "order.delivered",
  "order.cancelled",
  "cheese.new_arrival",
  "cheese.low_stock",
  "cheese.out_of_stock",
  "cheese.back_in_stock",
  "customer.created",
  "customer.updated",
  "customer.subscription_changed",
  "api_key.expiring",
  "webhook.test",
  "webhook.disabled",
] as const;
export const WebhookEventKind = z.enum(webhookEventKinds).openapi("WebhookEventKind");
export type WebhookEventKind = z.infer<typeof WebhookEventKind>;

const int64Id = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).openapi({ format: "int64" });
const dateTime = z.string().openapi({ format: "date-time" });
const idString = z.string().openapi({ description: "an id, as a string" });

/** `whsec_` + base64 of 24 to 64 bytes: the Standard Webhooks secret format (as Svix uses). */
export const webhookSecretPattern = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;
export function isValidWebhookSecret(secret: string): boolean {
  if (!webhookSecretPattern.test(secret)) return false;
  const bytes = Buffer.from(secret.slice("whsec_".length), "base64").length;
  return bytes >= 24 && bytes <= 64;
}

/** How `webhook-signature` is signed (docs/webhooks.md "Delivery"); X-Cheese-Signature is always the HMAC. */
export const webhookSignatureAlgorithms = ["hmac-sha256", "ed25519"] as const;
export const WebhookSignatureAlgorithm = z.enum(webhookSignatureAlgorithms);
export type WebhookSignatureAlgorithm = z.infer<typeof WebhookSignatureAlgorithm>;
const signatureAlgorithms = z
  .array(WebhookSignatureAlgorithm)
  .min(1)
  .max(webhookSignatureAlgorithms.length)
  .refine((list) => new Set(list).size === list.length, "must not repeat an algorithm")
  .openapi({
    description:
      'which signatures webhook-signature carries: hmac-sha256 (v1, keyed with the secret), ed25519 (v1a, by the system\'s key published at /.well-known/webhook-keys.json); ["hmac-sha256"] when absent. X-Cheese-Signature is the HMAC whatever is chosen.',
    example: ["hmac-sha256", "ed25519"],
  });

const webhookFilter = z.string().min(1).max(1024).openapi({
  description:
    'a CEL expression over the delivery body\'s type, created_at and data: only the events it matches are delivered to this registration (docs/webhooks.md "Payload filters"); at most 1024 characters. A syntax or type error is 422 naming filter.',
  example: 'type == "order.placed" && data.total > 100.0',
});

const webhookOrdered = z.boolean().openapi({
  description:
    'true: the events of one aggregate (one order, one cheese, one customer, one API key) reach this registration one at a time, in the order they happened, each with X-Cheese-Sequence (docs/webhooks.md "Ordered lanes"); false when absent',
  example: true,
});

const webhookUrl = httpUrl(
  2048,
  "must be an absolute https URL (http only where private URLs are allowed)",
).openapi({ example: "https://example.com/hooks/cheese" });

/** `rateLimit`: at most `perSecond` attempts per second to this registration (docs/webhooks.md "Throttle"). */
export const WebhookRateLimit = z
  .strictObject({
    perSecond: z.number().int().min(1).max(1000).openapi({
      description:
        "attempts per second at most, retries included, over every notification process; the excess waits (nothing is dropped)",
    }),
  })
  .openapi("WebhookRateLimit", { example: { perSecond: 5 } });
export type WebhookRateLimit = z.infer<typeof WebhookRateLimit>;

/**
 * Request headers a registration's static `auth.headers` may not set: hop-by-hop and framing
 * headers (RFC 9110 §7.6.1), and those the delivery itself carries (its signatures, identity,
 * content and trace).
 */
export const reservedAuthHeaderNames = [
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "content-type",
  "content-encoding",
  "expect",
  "user-agent",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "traceparent",
  "tracestate",
] as const;
/** An HTTP token (RFC 9110 §5.6.2) of letters, digits and hyphens, 1 to 64 characters. */
export const authHeaderNamePattern = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
/** Visible ASCII, spaces and tabs inside (no CR, LF or other control character), 1 to 4096. */
const authHeaderValuePattern = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

export function authHeaderNameProblem(name: string): string | undefined {
  if (!authHeaderNamePattern.test(name)) return "must be 1 to 64 letters, digits and hyphens";
  const lower = name.toLowerCase();
  if ((reservedAuthHeaderNames as readonly string[]).includes(lower) || lower.startsWith("x-cheese-"))
    return "is a hop-by-hop header or one the delivery sets itself";
  return undefined;
}

/** What a masked credential is answered as: never any part of the value. */
export const MASKED_SECRET = "********";

const OAuth2ClientCredentialsInput = z
  .strictObject({
    type: z.literal("oauth2_client_credentials"),
    tokenUrl: httpUrl(
      2048,
      "must be an absolute https URL (http only where private URLs are allowed)",
    ).openapi({
      description:
        "the token endpoint; the rules of the registration's url apply (https, no private address, checked again at each request)",
      example: "https://auth.example.com/oauth2/token",
    }),
    clientId: z.string().min(1).max(256),
    clientSecret: z
      .string()
      .min(1)
      .max(1024)
      .openapi({ description: "write-only: sealed at rest, never answered" }),
    scope: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .openapi({ description: "space-separated scopes to ask for" }),
  })
  .openapi("WebhookOAuth2Input");

const StaticHeadersInput = z
  .strictObject({
    type: z.literal("headers"),
    headers: z
      .record(
        z.string(),
        z
          .string()
          .max(4096)
          .regex(authHeaderValuePattern, "must be 1 to 4096 visible ASCII characters (spaces inside)"),
      )
      .refine(
        (headers) => Object.keys(headers).length >= 1 && Object.keys(headers).length <= 20,
        "must hold 1 to 20 headers",
      )
      .superRefine((headers, ctx) => {
        for (const name of Object.keys(headers)) {
          const problem = authHeaderNameProblem(name);
          if (problem) ctx.addIssue({ code: "custom", path: [name], message: `the name ${problem}` });
        }
      })
      .refine(
        (headers) =>
          new Set(Object.keys(headers).map((name) => name.toLowerCase())).size ===
          Object.keys(headers).length,
        "must not name a header twice",
      )
      .openapi({
        description: "header name to value; values are write-only (sealed at rest, answered masked)",
        example: { "X-Api-Key": "k_live_123" },
      }),
  })
  .openapi("WebhookStaticHeadersInput");

export const WebhookAuthInput = z
  .discriminatedUnion("type", [OAuth2ClientCredentialsInput, StaticHeadersInput])
  .openapi("WebhookAuthInput", {
    description:
      'how deliveries authenticate to the receiver besides the signatures (docs/webhooks.md "Receiver auth"): an OAuth2 client credentials grant (sent as Authorization: Bearer) or static headers',
  });
export type WebhookAuthInput = z.infer<typeof WebhookAuthInput>;

/** A registration's auth as answered: its secrets masked. */
export const WebhookAuth = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("oauth2_client_credentials"),
      tokenUrl: z.string().openapi({ format: "uri" }),
      clientId: z.string(),
      clientSecret: z.literal(MASKED_SECRET).openapi({ description: "always masked" }),
      scope: z.string().nullable(),
    }),
    z.object({
      type: z.literal("headers"),
      headers: z.record(z.string(), z.literal(MASKED_SECRET)).openapi({
        description: "the header names; every value masked",
      }),
    }),
  ])
  .openapi("WebhookAuth");
export type WebhookAuth = z.infer<typeof WebhookAuth>;

/** Read-only fields are accepted and ignored in create bodies (docs/webhooks.md). */
const ignoredReadOnly = {
  id: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  createdAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
};

export const WebhookInput = z
  .strictObject({
    url: webhookUrl.openapi({
      description: "receiving URL; https (http only when private URLs are allowed)",
    }),
    events: z
      .array(WebhookEventKind)
      .min(1)
      .max(webhookEventKinds.length)
      .openapi({ description: "event kinds wanted; duplicates are ignored" }),
    secret: z
      .string()
      .refine(isValidWebhookSecret, "must be whsec_ followed by base64 of 24 to 64 bytes")
      .optional()
      .openapi({ description: "signing secret; generated (whsec_ + 32 random bytes, base64) when absent" }),
    description: z.string().max(500).nullable().optional(),
    signatureAlgorithms: signatureAlgorithms.optional(),
    filter: webhookFilter.nullable().optional(),
    ordered: webhookOrdered.optional(),
    rateLimit: WebhookRateLimit.nullable()
      .optional()
      .openapi({ description: "the throttle; none when absent or null" }),
    auth: WebhookAuthInput.nullable().optional().openapi({
      description: "how deliveries authenticate to the receiver; signatures only when absent or null",
    }),
    ...ignoredReadOnly,
  })
  .openapi("WebhookInput");
export type WebhookInput = z.infer<typeof WebhookInput>;

export const webhookStatuses = ["active", "paused", "disabled"] as const;
export const WebhookStatus = z.enum(webhookStatuses).openapi({
  description:
    "active: deliveries go out; paused: stopped by an operator, deliveries wait; disabled: every attempt failed for the configured period (5 days by default), or the receiver answered 410 Gone or webhook-delivery: disable; deliveries wait. POST /webhooks/{id}/resume makes it active again.",
});

export const Webhook = z
  .object({
    id: int64Id,
    url: z.string().openapi({ format: "uri" }),
    events: z.array(WebhookEventKind),
    description: z.string().nullable(),
    signatureAlgorithms: z.array(WebhookSignatureAlgorithm).openapi({
      description: "which signatures webhook-signature carries (hmac-sha256: v1, ed25519: v1a)",
    }),
    filter: z.string().nullable().openapi({
      description: "the CEL expression an event must match to be delivered; null: every event of the kinds",
    }),
    ordered: z.boolean().openapi({
      description:
        "whether each aggregate's events come one at a time in the order they happened (ordered lanes)",
    }),
    rateLimit: z.union([WebhookRateLimit, z.null()]).openapi({ description: "the throttle; null: none" }),
    auth: z.union([WebhookAuth, z.null()]).openapi({
      description: "how deliveries authenticate, secrets masked; null: signatures only",
    }),
    status: WebhookStatus,
    statusReason: z
      .string()
      .nullable()
      .openapi({ description: "why it is paused or disabled; null while active" }),
    statusSince: dateTime.openapi({ description: "since when it has its current status" }),
    failingSince: dateTime.nullable().openapi({
      description: "when disabled for failing: the first failed attempt of the run that disabled it",
    }),
    previousSecretExpiresAt: dateTime.nullable().openapi({
      description:
        "after a rotation: until when the previous secret still signs; null when only one secret signs",
    }),
    createdAt: dateTime,
    updatedAt: dateTime,
  })
  .openapi("Webhook", {
    example: {
      id: 3,
      url: "https://example.com/hooks/cheese",
      events: ["order.placed", "order.shipped"],
      description: "fulfilment",
      signatureAlgorithms: ["hmac-sha256", "ed25519"],
      filter: 'type == "order.placed" && data.total > 100.0',
      ordered: true,
      rateLimit: { perSecond: 5 },
      auth: { type: "headers", headers: { "X-Api-Key": MASKED_SECRET } },
      status: "disabled",
      statusReason: "every delivery attempt failed from 2026-03-01T10:00:00.000Z to 2026-03-06T10:00:04.000Z",
      statusSince: "2026-03-06T10:00:04.000Z",
      failingSince: "2026-03-01T10:00:00.000Z",
      previousSecretExpiresAt: null,
      createdAt: "2026-02-20T09:00:00.000Z",
      updatedAt: "2026-03-06T10:00:04.000Z",
    },
  });
export type Webhook = z.infer<typeof Webhook>;

/** Fields of a registration that a PATCH body may carry but that cannot be changed: ignored. */
const ignoredInPatch = Object.fromEntries(
  [
    "id",
    "createdAt",
    "updatedAt",
    "status",
    "statusReason",
    "statusSince",
    "failingSince",
    "previousSecretExpiresAt",
  ].map((field) => [field, z.unknown().optional().openapi({ readOnly: true, description: "ignored" })]),
);

export const WebhookPatch = z
  .strictObject({
    url: webhookUrl.optional().openapi({ description: "new receiving URL; the rules of creation apply" }),
    events: z
      .array(WebhookEventKind)
      .min(1)
      .max(webhookEventKinds.length)
      .optional()
      .openapi({ description: "the kinds wanted from now on (replaces the list)" }),
    description: z.string().max(500).nullable().optional(),
    signatureAlgorithms: signatureAlgorithms
      .optional()
      .openapi({ description: "the signatures webhook-signature carries from the next attempt on" }),
    filter: webhookFilter
      .nullable()
      .optional()
      .openapi({ description: "the filter from now on (CEL, as at creation); null removes it" }),
    ordered: webhookOrdered
      .optional()
      .openapi({ description: "ordered lanes for the events recorded from now on (true) or not (false)" }),
    rateLimit: WebhookRateLimit.nullable()
      .optional()
      .openapi({ description: "the throttle from now on; null removes it" }),
    auth: WebhookAuthInput.nullable()
      .optional()
      .openapi({ description: "the receiver auth from now on, whole (secrets included); null removes it" }),
    ...ignoredInPatch,
  })
  .openapi("WebhookPatch", {
    example: { url: "https://example.com/hooks/cheese-v2", events: ["order.placed"] },
  });
export type WebhookPatch = z.infer<typeof WebhookPatch>;

export const FilterPreviewInput = z
  .strictObject({
    filter: webhookFilter,
    events: z
      .array(WebhookEventKind)
      .min(1)
      .max(webhookEventKinds.length)
      .optional()
      .openapi({ description: "the kinds to try it on; every kind when absent" }),
    limit: z
      .number()
      .int()
      .min(1)
      .max(500)
      .optional()
      .openapi({ description: "how many of the most recent recorded events to try; 50 when absent" }),
  })
  .openapi("FilterPreviewInput", {
    example: { filter: 'type == "order.placed" && data.total > 100.0', events: ["order.placed"], limit: 20 },
  });

export const FilterPreview = z
  .object({
    matched: z.number().int().min(0).openapi({ description: "how many of the items the filter matches" }),
    total: z.number().int().min(0).openapi({ description: "how many events were tried (the items)" }),
    items: z.array(
      z.object({
        id: z.string().openapi({ description: "the event id (the delivery body's id)" }),
        type: WebhookEventKind,
        created_at: dateTime,
        matched: z.boolean(),
      }),
    ),
  })
  .openapi("FilterPreview", {
    example: {
      matched: 1,
      total: 2,
      items: [
        {
          id: "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
          type: "order.placed",
          created_at: "2026-03-03T11:00:00.000Z",
          matched: true,
        },
        {
          id: "evt_0b9e2f4d6a8c1e3f5a7b9d0c2e4f6a8b",
          type: "order.placed",
          created_at: "2026-03-03T10:58:00.000Z",
          matched: false,
        },
      ],
    },
  });
export type FilterPreview = z.infer<typeof FilterPreview>;

export const RotateSecretInput = z
  .strictObject({
    secret: z
      .string()
      .refine(isValidWebhookSecret, "must be whsec_ followed by base64 of 24 to 64 bytes")
      .optional()
      .openapi({ description: "the new secret; generated (whsec_ + 32 random bytes, base64) when absent" }),
    overlapSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .optional()
      .openapi({
        description:
          "how long the previous secret keeps signing beside the new one; 86400 (24 h) when absent",
      }),
  })
  .openapi("RotateSecretInput", { example: { overlapSeconds: 3600 } });

export const SecretRotated = z
  .object({
    secret: z.string().openapi({ description: "the new signing secret; shown only in this response" }),
    previousSecretExpiresAt: dateTime.openapi({ description: "until when the previous secret also signs" }),
  })
  .openapi("SecretRotated");
export type SecretRotated = z.infer<typeof SecretRotated>;

export const replayStatuses = ["dead_lettered", "delivered"] as const;

export const ReplayInput = z
  .strictObject({
    since: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({ description: "only deliveries created at or after this time" }),
    until: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({ description: "only deliveries created before this time" }),
    status: z
      .array(z.enum(replayStatuses))
      .min(1)
      .optional()
      .openapi({ description: 'which finished deliveries to start again; ["dead_lettered"] when absent' }),
  })
  .refine((body) => !body.since || !body.until || Date.parse(body.since) < Date.parse(body.until), {
    message: "must be before until",
    path: ["since"],
  })
  .openapi("ReplayInput", {
    example: {
      since: "2026-03-01T04:00:00Z",
      until: "2026-03-01T10:00:00Z",
      status: ["delivered", "dead_lettered"],
    },
  });
export type ReplayInput = z.infer<typeof ReplayInput>;

export const ReplayResult = z
  .object({
    replayed: z.number().int().min(0).openapi({ description: "deliveries started again as a new round" }),
  })
  .openapi("ReplayResult");

export const WebhookCreated = Webhook.extend({
  secret: z.string().openapi({ description: "the signing secret; shown only in this response" }),
  // Not Webhook's example (it lacks the secret); the operation's example shows one.
}).openapi("WebhookCreated", { example: undefined });
export type WebhookCreated = z.infer<typeof WebhookCreated>;

export const WebhookList = z
  .object({
    items: z.array(Webhook),
    nextCursor: z.string().nullable(),
    hasMore: z.boolean(),
  })
  .openapi("WebhookList");

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

// ---- The data of each event kind (snake_case keys, ids as strings) ----

const OrderLineData = z.object({
  cheese_id: idString,
  cheese_name: z.string(),
  quantity: z.number().int(),
  price_per_kg: z.number(),
});

export const OrderEventData = z
  .object({
    order_id: idString,
    customer_id: idString.nullable().openapi({ description: "null when an operator client placed it" }),
    status: z.enum(["placed", "approved", "shipped", "delivered", "cancelled"]),
    total: z.number().openapi({ description: "USD" }),
    items: z.array(OrderLineData),
    updated_at: dateTime,
  })
  .openapi("OrderEventData");

export const OrderCancelledData = OrderEventData.extend({ reason: z.string() }).openapi("OrderCancelledData");

export const OrderShippedData = z
  .object({
    order_id: idString,
    tracking_number: z.string(),
    carrier: z.string(),
    estimated_delivery: dateTime,
  })
  .openapi("OrderShippedData");

export const CheeseArrivalData = z
  .object({
    cheese_id: idString,
    name: z.string(),
    status: z.enum(["available", "pending", "sold"]),
    category: z.string().nullable(),
    tags: z.array(z.string()),
    origin: z.string().nullable(),
    price_per_kg: z.number().nullable(),
    organic: z.boolean(),
  })
  .openapi("CheeseArrivalData");

export const CheeseStockData = z
  .object({
    cheese_id: idString,
    name: z.string(),
    previous_status: z.enum(["available", "pending", "sold"]),
    status: z.enum(["available", "pending", "sold"]),
  })
  .openapi("CheeseStockData");

export const CustomerEventData = z
  .object({ customer_id: idString, username: z.string() })
  .openapi("CustomerEventData");

const tier = z.enum(["bronze", "silver", "gold", "platinum"]);
export const CustomerSubscriptionData = CustomerEventData.extend({
  previous_customer_status: tier,
  customer_status: tier,
}).openapi("CustomerSubscriptionData");

export const ApiKeyExpiringData = z
  .object({
    customer_id: idString,
    username: z.string(),
    key_id: idString,
    key_prefix: z.string(),
    expires_at: dateTime,
  })
  .openapi("ApiKeyExpiringData");

export const WebhookDisabledData = z
  .object({
    webhook_id: idString,
    description: z.string().nullable(),
    reason: z.string(),
    failing_since: dateTime,
    disabled_at: dateTime,
  })
  .openapi("WebhookDisabledData");

export const WebhookTestData = z
  .object({ webhook_id: idString, message: z.string() })
  .openapi("WebhookTestData");

const at = (day: string, time = "09:30:00") => `2026-03-${day}T${time}.000Z`;
const orderData = {
  order_id: "1007",
  customer_id: "12",
  status: "placed",
  total: 69,
  items: [{ cheese_id: "42", cheese_name: "Comté 18 mois", quantity: 2, price_per_kg: 34.5 }],
  updated_at: at("03", "11:00:00"),
} as const;
const comte = { cheese_id: "42", name: "Comté 18 mois" } as const;
const alice = { customer_id: "12", username: "alice" } as const;
/** An example delivery body: the envelope's `id` and `created_at` (its `type` is the kind's). */
const example = <D>(id: string, createdAt: string, data: D) => ({
  id: `evt_${id}`,
  created_at: createdAt,
  data,
});

/**
 * The event catalogue, the one source of what each kind is: its `data` schema, what sends it and
 * an example body. The OpenAPI `webhooks` section, `GET /v2/webhooks/event-types` and the
 * AsyncAPI document (`GET /v2/asyncapi.json`) are all made from it (docs/webhooks.md says the same).
 */
export const webhookEventData = {
  "order.placed": {
    schema: OrderEventData,
    when: "an order is placed",
    example: example("6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c", at("03", "11:00:00"), orderData),
  },
  "order.confirmed": {
    schema: OrderEventData,
    when: "an order is approved after its asynchronous check",
    example: example("0b9e2f4d6a8c1e3f5a7b9d0c2e4f6a8b", at("03", "11:00:02"), {
      ...orderData,
      status: "approved",
      updated_at: at("03", "11:00:02"),
    }),
  },
  "order.shipped": {
    schema: OrderShippedData,
    when: "an order is shipped",
    example: example("1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f", at("04", "08:15:00"), {
      order_id: "1007",
      tracking_number: "RM123456785GB",
      carrier: "Royal Mail",
      estimated_delivery: at("06", "17:00:00"),
    }),
  },
  "order.delivered": {
    schema: OrderEventData,
    when: "an order is delivered",
    example: example("2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a", at("06", "10:42:00"), {
      ...orderData,
      status: "delivered",
      updated_at: at("06", "10:42:00"),
    }),
  },
  "order.cancelled": {
    schema: OrderCancelledData,
    when: "an order is cancelled (by its customer, by the check, or because its cheese was deleted)",
    example: example("3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b", at("03", "12:00:00"), {
      ...orderData,
      status: "cancelled",
      updated_at: at("03", "12:00:00"),
      reason: "cancelled by the customer",
    }),
  },
  "cheese.new_arrival": {
    schema: CheeseArrivalData,
    when: "a cheese is added to the catalogue",
    example: example("4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c", at("01", "08:00:00"), {
      ...comte,
      status: "available",
      category: "Hard",
      tags: ["cow", "raw milk"],
      origin: "France",
      price_per_kg: 34.5,
      organic: true,
    }),
  },
  "cheese.low_stock": {
    schema: CheeseStockData,
    when: "a cheese's status becomes pending",
    example: example("5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d", at("04"), {
      ...comte,
      previous_status: "available",
      status: "pending",
    }),
  },
  "cheese.out_of_stock": {
    schema: CheeseStockData,
    when: "a cheese's status becomes sold",
    example: example("6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", at("05"), {
      ...comte,
      previous_status: "pending",
      status: "sold",
    }),
  },
  "cheese.back_in_stock": {
    schema: CheeseStockData,
    when: "a cheese's status becomes available again",
    example: example("7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f", at("06"), {
      ...comte,
      previous_status: "sold",
      status: "available",
    }),
  },
  "customer.created": {
    schema: CustomerEventData,
    when: "a customer registers (also each element of a batch)",
    example: example("8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a", at("01", "08:00:00"), alice),
  },
  "customer.updated": {
    schema: CustomerEventData,
    when: "a customer changes their account",
    example: example("9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b", at("05"), alice),
  },
  "customer.subscription_changed": {
    schema: CustomerSubscriptionData,
    when: "a customer's customerStatus (tier) changes",
    example: example("0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c", at("05", "16:45:00"), {
      ...alice,
      previous_customer_status: "bronze",
      customer_status: "silver",
    }),
  },
  "api_key.expiring": {
    schema: ApiKeyExpiringData,
    when: "7 days before a customer API key expires",
    example: example("1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d", "2026-05-23T08:00:00.000Z", {
      ...alice,
      key_id: "7",
      key_prefix: "chs_Xq3v9LmP",
      expires_at: "2026-05-30T08:00:00.000Z",
    }),
  },
  "webhook.test": {
    schema: WebhookTestData,
    when: "POST /webhooks/{id}/test is called",
    example: example("2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e", at("05", "10:00:00"), {
      webhook_id: "3",
      message: "a test event from Cheese Store",
    }),
  },
  "webhook.disabled": {
    schema: WebhookDisabledData,
    when: "another registration is disabled: every attempt to it failed for the configured period, or its receiver asked (410 Gone, webhook-delivery: disable)",
    example: example("3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f", at("06", "10:00:04"), {
      webhook_id: "3",
      description: "fulfilment",
      reason: "every delivery attempt failed from 2026-03-01T10:00:00.000Z to 2026-03-06T10:00:04.000Z",
      failing_since: at("01", "10:00:00"),
      disabled_at: at("06", "10:00:04"),
    }),
  },
} satisfies Record<
  WebhookEventKind,
  { schema: z.ZodType; when: string; example: { id: string; created_at: string; data: unknown } }
>;

/** The example delivery body of a kind, as a receiver gets it. */
export function webhookEventExample(kind: WebhookEventKind) {
  const { id, created_at, data } = webhookEventData[kind].example;
  return { id, type: kind, created_at, data };
}

/** The body of every delivery. */
export function webhookEnvelope<K extends WebhookEventKind>(kind: K) {
  return z.object({
    id: z
      .string()
      .openapi({ description: "event id; the same in every attempt and replay; use it to deduplicate" }),
    type: z.literal(kind),
    created_at: dateTime.openapi({ description: "when the event happened; use it for ordering" }),
    data: webhookEventData[kind].schema,
  });
}

/** The headers of every delivery attempt (docs/webhooks.md "Delivery"). */
export const webhookDeliveryHeaders = z.object({
  "X-Cheese-Signature": z.string().openapi({
    description:
      "sha256=<hex of HMAC-SHA256(secret, raw body)>, keyed with the secret string as shown at registration (after a rotation: the new secret, also during the overlap)",
  }),
  "X-Cheese-Event": z.string().openapi({ description: "the event kind, as in `type`" }),
  "X-Cheese-Delivery": z.string().openapi({ description: "the delivery id (GET /webhooks/{id}/deliveries)" }),
  "X-Cheese-Sequence": z.string().optional().openapi({
    description:
      "only to a registration with ordered: true (and not on webhook.test): the event's place in its aggregate's lane, 1, 2, 3 … per registration and aggregate; a number never received is a delivery that was dead-lettered",
  }),
  "webhook-id": z
    .string()
    .openapi({ description: "Standard Webhooks: the event id, as in the envelope's `id`" }),
  "webhook-timestamp": z
    .string()
    .openapi({ description: "Standard Webhooks: Unix seconds when this attempt was signed" }),
  "webhook-signature": z.string().openapi({
    description:
      "Standard Webhooks, space-separated signatures of '{webhook-id}.{webhook-timestamp}.{body}': with hmac-sha256 among the registration's signatureAlgorithms, v1,<base64 HMAC-SHA256> keyed with the base64-decoded part of the secret after whsec_ (during a secret rotation's overlap two, the new secret's first); with ed25519, v1a,<base64 Ed25519 signature> by the system's signing key, verifiable with the JWK set at /.well-known/webhook-keys.json (during a signing key rotation's overlap two, the new key's first)",
  }),
});

/** One kind of the catalogue (`GET /webhooks/event-types`). */
export const WebhookEventType = z
  .object({
    type: WebhookEventKind,
    description: z.string().openapi({ description: "when it is sent" }),
    dataSchema: z
      .record(z.string(), z.unknown())
      .openapi({ description: "the JSON Schema (2020-12) of the envelope's `data`" }),
    example: z.record(z.string(), z.unknown()).openapi({ description: "a delivery body of this kind" }),
  })
  .openapi("WebhookEventType");

export const WebhookEventTypeList = z
  .object({
    items: z.array(WebhookEventType).openapi({ description: "every kind a registration may ask for" }),
  })
  .openapi("WebhookEventTypeList");

/** GET /asyncapi.json, as the OpenAPI document describes it (the document is made elsewhere). */
export const AsyncApiDocument = z.object({ asyncapi: z.string() }).passthrough();

/** A public key of the system's webhook signing key, as a JWK (RFC 8037). */
export const WebhookSigningJwk = z
  .object({
    kty: z.literal("OKP"),
    crv: z.literal("Ed25519"),
    x: z.string().openapi({ description: "the public key, base64url" }),
    kid: z.string().openapi({ description: "the key's RFC 7638 thumbprint" }),
    alg: z.literal("EdDSA"),
    use: z.literal("sig"),
  })
  .openapi("WebhookSigningJwk");

export const WebhookSigningKeySet = z
  .object({
    keys: z.array(WebhookSigningJwk).openapi({
      description:
        "the keys whose v1a signatures deliveries carry now: one, or two during a rotation's overlap",
    }),
  })
  .openapi("WebhookSigningKeySet");
export type WebhookSigningKeySet = z.infer<typeof WebhookSigningKeySet>;

export const RotateSigningKeyInput = z
  .strictObject({
    overlapSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .optional()
      .openapi({
        description: "how long the previous key keeps signing and stays published; 86400 (24 h) when absent",
      }),
  })
  .openapi("RotateSigningKeyInput", { example: { overlapSeconds: 3600 } });

export const SigningKeyRotated = z
  .object({
    kid: z.string().openapi({ description: "the new key, which signs from now on" }),
    previousKid: z.string().openapi({ description: "the key it replaces" }),
    previousKeyExpiresAt: dateTime.openapi({
      description: "until when the previous key also signs and is published",
    }),
  })
  .openapi("SigningKeyRotated");
export type SigningKeyRotated = z.infer<typeof SigningKeyRotated>;

// ---- Path and query parameters of /webhooks ----

export const WebhookIdParam = z.object({
  id: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .openapi({ param: { name: "id", in: "path" }, type: "integer", format: "int64", minimum: 1 }),
});

export const WebhookListQuery = z.object(pageQuery);

export const DeliveryIdParam = WebhookIdParam.extend({
  deliveryId: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .openapi({ param: { name: "deliveryId", in: "path" }, type: "integer", format: "int64", minimum: 1 }),
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
