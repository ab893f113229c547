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

const webhookUrl = httpUrl(
  2048,
  "must be an absolute https URL (http only where private URLs are allowed)",
).openapi({ example: "https://example.com/hooks/cheese" });

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
    ...ignoredReadOnly,
  })
  .openapi("WebhookInput");
export type WebhookInput = z.infer<typeof WebhookInput>;

export const webhookStatuses = ["active", "paused", "disabled"] as const;
export const WebhookStatus = z.enum(webhookStatuses).openapi({
  description:
    "active: deliveries go out; paused: stopped by an operator, deliveries wait; disabled: every attempt failed for the configured period (5 days by default), deliveries wait. POST /webhooks/{id}/resume makes it active again.",
});

export const Webhook = z
  .object({
    id: int64Id,
    url: z.string().openapi({ format: "uri" }),
    events: z.array(WebhookEventKind),
    description: z.string().nullable(),
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
    ...ignoredInPatch,
  })
  .openapi("WebhookPatch", {
    example: { url: "https://example.com/hooks/cheese-v2", events: ["order.placed"] },
  });
export type WebhookPatch = z.infer<typeof WebhookPatch>;

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

/** The data schema of each kind, with what sends it (docs/webhooks.md says the same). */
export const webhookEventData = {
  "order.placed": { schema: OrderEventData, when: "an order is placed" },
  "order.confirmed": { schema: OrderEventData, when: "an order is approved after its asynchronous check" },
  "order.shipped": { schema: OrderShippedData, when: "an order is shipped" },
  "order.delivered": { schema: OrderEventData, when: "an order is delivered" },
  "order.cancelled": {
    schema: OrderCancelledData,
    when: "an order is cancelled (by its customer, by the check, or because its cheese was deleted)",
  },
  "cheese.new_arrival": { schema: CheeseArrivalData, when: "a cheese is added to the catalogue" },
  "cheese.low_stock": { schema: CheeseStockData, when: "a cheese's status becomes pending" },
  "cheese.out_of_stock": { schema: CheeseStockData, when: "a cheese's status becomes sold" },
  "cheese.back_in_stock": { schema: CheeseStockData, when: "a cheese's status becomes available again" },
  "customer.created": {
    schema: CustomerEventData,
    when: "a customer registers (also each element of a batch)",
  },
  "customer.updated": { schema: CustomerEventData, when: "a customer changes their account" },
  "customer.subscription_changed": {
    schema: CustomerSubscriptionData,
    when: "a customer's customerStatus (tier) changes",
  },
  "api_key.expiring": { schema: ApiKeyExpiringData, when: "7 days before a customer API key expires" },
  "webhook.test": { schema: WebhookTestData, when: "POST /webhooks/{id}/test is called" },
  "webhook.disabled": {
    schema: WebhookDisabledData,
    when: "another registration is disabled because every attempt to it failed for the configured period",
  },
} satisfies Record<WebhookEventKind, { schema: z.ZodType; when: string }>;

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

export const DeliveryListQuery = z.object({
  ...pageQuery,
  status: z
    .preprocess(
      (value) =>
        value === undefined
          ? undefined
          : String(value)
              .split(",")
              .map((part) => part.trim()),
      z.array(DeliveryStatus).min(1).optional(),
    )
    .openapi({
      param: { name: "status", in: "query", style: "form", explode: false },
      type: "array",
      items: { type: "string", enum: [...deliveryStatuses] },
      description:
        "only deliveries in these statuses, comma-separated (dead_lettered lists the dead letter queue)",
    }),
});
