// What a receiver gets: each event kind's data (snake_case keys, ids as strings) and example, the
// envelope, a delivery's headers, the list of event types, and the Ed25519 keys that sign (as
// JWKs) with their rotation.
import { z } from "@hono/zod-openapi";
import { dateTime } from "./fields.ts";
import { WebhookEventKind } from "./webhook.ts";

const idString = z.string().openapi({ description: "an id, as a string" });

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
