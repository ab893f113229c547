import type { WebhookCreated, WebhookEventKind } from "@cheese/contracts";
import {
  contextMetadata,
  DomainError,
  foldEvents,
  type HandlerContext,
  handleCommand,
} from "@cheese/service-kit";
import { deliveryDecider, deliveryStream } from "../domain/delivery.ts";
import { newEventId } from "../domain/event-mapping.ts";
import { type WebhookState, webhookDecider, webhookStream } from "../domain/webhook.ts";
import { DELIVERIES, type DeliveryDocument } from "../projections/deliveries.ts";
import { webhookUrlProblem } from "../security/address-policy.ts";
import { generateWebhookSecret } from "../security/secrets.ts";
import { fanOut } from "./fan-out.ts";
import type { NotificationSide } from "./side.ts";

export interface WebhookRequest {
  url: string;
  events: WebhookEventKind[];
  secret?: string | undefined;
  description: string | null;
}

/**
 * Registers a receiver. The URL is checked here (scheme, and every address its name resolves to)
 * and again at each attempt. The secret is returned this once; events hold it sealed.
 */
export async function createWebhook(
  side: NotificationSide,
  request: WebhookRequest,
  context: HandlerContext,
): Promise<WebhookCreated> {
  const problem = await webhookUrlProblem(request.url, {
    allowPrivate: side.allowPrivateUrls,
    ...(side.resolve ? { resolve: side.resolve } : {}),
  });
  if (problem) {
    throw new DomainError(422, "validation_error", "request body failed validation", [
      { field: "url", message: problem },
    ]);
  }
  const secret = request.secret ?? generateWebhookSecret();
  const webhookId = await side.webhookIds.nextId();
  const registration = {
    webhookId,
    url: request.url,
    events: [...new Set(request.events)],
    description: request.description,
    secret: side.secrets.seal(secret),
    createdAt: new Date().toISOString(),
  };
  await handleCommand(
    side.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Register", registration },
    { metadata: contextMetadata(context) },
  );
  const { url, events, description, createdAt } = registration;
  return { id: webhookId, url, events, secret, description, createdAt };
}

/** Deletes a registration; its deliveries still waiting are cancelled. */
export async function deleteWebhook(side: NotificationSide, webhookId: number, context: HandlerContext) {
  const now = new Date().toISOString();
  const metadata = contextMetadata(context);
  await handleCommand(
    side.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Delete", webhookId, now },
    { metadata: metadata },
  );
  await side.projection.catchUp();
  const waiting = await side.readModels
    .collection<DeliveryDocument>(DELIVERIES)
    .find({ webhookId, status: { $in: ["pending", "retry_scheduled", "dead_lettered"] } });
  for (const delivery of waiting) {
    await handleCommand(
      side.store,
      deliveryStream(delivery._id),
      deliveryDecider,
      { type: "Cancel", now, reason: "webhook deleted" },
      { metadata: metadata },
    ).catch((error: unknown) =>
      context.logger.warn({ err: error, deliveryId: delivery._id }, "cancel failed"),
    );
  }
  return { deleted: true };
}

/** Sends a webhook.test event to this registration only, whatever kinds it subscribed to. */
export async function sendTestEvent(side: NotificationSide, webhookId: number, context: HandlerContext) {
  await requireActive(side, webhookId);
  const eventId = newEventId();
  const recorded = await fanOut(
    side,
    {
      eventId,
      kind: "webhook.test",
      data: { webhook_id: String(webhookId), message: "a test event from Cheese Store" },
    },
    contextMetadata(context),
    [webhookId],
  );
  return { deliveryId: recorded!.deliveries[0]!.deliveryId };
}

/** Starts every dead-lettered delivery of the registration again from attempt 1. */
export async function replayDeadLetters(side: NotificationSide, webhookId: number, context: HandlerContext) {
  await requireActive(side, webhookId);
  await side.projection.catchUp();
  const dead = await side.readModels
    .collection<DeliveryDocument>(DELIVERIES)
    .find({ webhookId, status: "dead_lettered" }, { sort: { createdAt: 1, _id: 1 } });
  const now = new Date().toISOString();
  let replayed = 0;
  for (const delivery of dead) {
    const result = await handleCommand(
      side.store,
      deliveryStream(delivery._id),
      deliveryDecider,
      { type: "Replay", now },
      { metadata: contextMetadata(context) },
    );
    replayed += result.newEvents.length > 0 ? 1 : 0;
  }
  side.wakeScheduler();
  return { replayed };
}

/** The registration from its own stream (the source of truth), or 404. */
export async function requireActive(side: NotificationSide, webhookId: number) {
  const state = foldEvents(
    webhookDecider,
    await side.store.readStream(webhookStream(webhookId)),
  ) as WebhookState;
  if (state.status !== "active") throw new DomainError(404, "not_found", `webhook ${webhookId} not found`);
  return state.registration;
}
