// A webhook registration as the API takes and answers it: the event kinds it may want, its secret,
// signatures, filter, lane and throttle, its receiver auth; a secret's rotation, a replay, the list
// and the /webhooks/{id} parameter. Its deliveries: webhook-deliveries.ts; what a receiver gets:
// webhook-events.ts.
import { z } from "@hono/zod-openapi";
import { dateTime, int64Id, pathId } from "./fields.ts";
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

// ---- Path and query parameters of /webhooks ----

export const WebhookIdParam = z.object({
  id: pathId("id"),
});

export const WebhookListQuery = z.object(pageQuery);
