import { defineRpc } from "@cheese/messaging";
import { z } from "zod";
import { consumerName, DeadLetter } from "../dead-letter.ts";
import {
  FilterPreview,
  replayStatuses,
  SecretRotated,
  Webhook,
  WebhookAuthInput,
  WebhookCreated,
  WebhookEventKind,
  WebhookRateLimit,
  WebhookSignatureAlgorithm,
} from "../webhook.ts";
import { Delivery, DeliveryDetail, DeliveryStatus, ResendResult } from "../webhook-deliveries.ts";
import { SigningKeyRotated, WebhookSigningKeySet } from "../webhook-events.ts";

const webhookId = z.number().int().positive();
const page = {
  /** Opaque cursor from a previous page's nextCursor. */
  cursor: z.string().optional(),
  limit: z.number().int().min(1).max(100),
};

export const notificationRpc = {
  /** The URL's scheme and addresses are checked by the service (it knows WEBHOOK_ALLOW_PRIVATE_URLS). */
  createWebhook: defineRpc({
    subject: "notification.webhook.create",
    request: z.object({
      url: z.string(),
      events: z.array(WebhookEventKind).min(1),
      secret: z.string().optional(),
      description: z.string().nullable(),
      signatureAlgorithms: z.array(WebhookSignatureAlgorithm).min(1).optional(),
      filter: z.string().min(1).nullable().optional(),
      ordered: z.boolean().optional(),
      rateLimit: WebhookRateLimit.nullable().optional(),
      auth: WebhookAuthInput.nullable().optional(),
    }),
    response: WebhookCreated,
  }),
  listWebhooks: defineRpc({
    subject: "notification.webhook.list",
    request: z.object(page),
    response: z.object({ items: z.array(Webhook), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
  }),
  getWebhook: defineRpc({
    subject: "notification.webhook.get",
    request: z.object({ webhookId }),
    response: Webhook,
  }),
  deleteWebhook: defineRpc({
    subject: "notification.webhook.delete",
    request: z.object({ webhookId }),
    response: z.object({ deleted: z.boolean() }),
  }),
  listDeliveries: defineRpc({
    subject: "notification.delivery.list",
    request: z.object({
      webhookId,
      ...page,
      status: z.array(DeliveryStatus).optional(),
      type: z.array(WebhookEventKind).optional(),
    }),
    response: z.object({ items: z.array(Delivery), nextCursor: z.string().nullable(), hasMore: z.boolean() }),
  }),
  /** One delivery with each attempt's request and the receiver's answer; 404 if not this registration's. */
  getDelivery: defineRpc({
    subject: "notification.delivery.get",
    request: z.object({ webhookId, deliveryId: z.number().int().positive() }),
    response: DeliveryDetail,
  }),
  /** A new round of one finished delivery; 409 while one is under way. */
  resendDelivery: defineRpc({
    subject: "notification.delivery.resend",
    request: z.object({ webhookId, deliveryId: z.number().int().positive() }),
    response: ResendResult,
  }),
  sendTestEvent: defineRpc({
    subject: "notification.webhook.test",
    request: z.object({ webhookId }),
    response: z.object({ deliveryId: z.number().int().positive() }),
  }),
  /** The URL is checked as at creation; only the fields given change. */
  updateWebhook: defineRpc({
    subject: "notification.webhook.update",
    request: z.object({
      webhookId,
      url: z.string().optional(),
      events: z.array(WebhookEventKind).min(1).optional(),
      description: z.string().nullable().optional(),
      signatureAlgorithms: z.array(WebhookSignatureAlgorithm).min(1).optional(),
      filter: z.string().min(1).nullable().optional(),
      ordered: z.boolean().optional(),
      rateLimit: WebhookRateLimit.nullable().optional(),
      auth: WebhookAuthInput.nullable().optional(),
    }),
    response: Webhook,
  }),
  pauseWebhook: defineRpc({
    subject: "notification.webhook.pause",
    request: z.object({ webhookId }),
    response: Webhook,
  }),
  /** Makes a paused or disabled registration active again. */
  resumeWebhook: defineRpc({
    subject: "notification.webhook.resume",
    request: z.object({ webhookId }),
    response: Webhook,
  }),
  rotateSecret: defineRpc({
    subject: "notification.webhook.rotate_secret",
    request: z.object({
      webhookId,
      secret: z.string().optional(),
      overlapMs: z.number().int().min(0).optional(),
    }),
    response: SecretRotated,
  }),
  /** How a filter would have judged the most recent recorded events of some kinds (422 for a bad one). */
  previewFilter: defineRpc({
    subject: "notification.webhook.filter_preview",
    request: z.object({
      filter: z.string(),
      events: z.array(WebhookEventKind).min(1).optional(),
      limit: z.number().int().min(1).max(500),
    }),
    response: FilterPreview,
  }),
  /** The public halves of the webhook signing keys that sign now (a JWK set). */
  signingKeys: defineRpc({
    subject: "notification.signing_key.list",
    request: z.object({}),
    response: WebhookSigningKeySet,
  }),
  /** A new signing key signs from now on; the previous one also signs, and is published, until the overlap ends. */
  rotateSigningKey: defineRpc({
    subject: "notification.signing_key.rotate",
    request: z.object({ overlapMs: z.number().int().min(0).optional() }),
    response: SigningKeyRotated,
  }),
  /**
   * Starts the registration's finished deliveries in `statuses` (dead-lettered ones by default)
   * created in [since, until) again; 422 when more match than one call may replay.
   */
  /** Integration events a consumer of any service dead-lettered (docs/architecture.md "Dead letters"). */
  listDeadLetters: defineRpc({
    subject: "notification.deadletter.list",
    request: z.object({ ...page, consumer: consumerName.optional() }),
    response: z.object({
      items: z.array(DeadLetter),
      nextCursor: z.string().nullable(),
      hasMore: z.boolean(),
    }),
  }),
  replayDeadLetter: defineRpc({
    subject: "notification.deadletter.replay",
    request: z.object({ id: z.string() }),
    response: z.object({ id: z.string(), consumer: consumerName }),
  }),
  deleteDeadLetter: defineRpc({
    subject: "notification.deadletter.delete",
    request: z.object({ id: z.string() }),
    response: z.object({ deleted: z.boolean() }),
  }),
  replayDeliveries: defineRpc({
    subject: "notification.webhook.replay",
    request: z.object({
      webhookId,
      since: z.string().optional(),
      until: z.string().optional(),
      statuses: z.array(z.enum(replayStatuses)).min(1).optional(),
    }),
    response: z.object({ replayed: z.number().int().min(0) }),
  }),
};
