import { randomUUID } from "node:crypto";
import type { WebhookCreated, WebhookEventKind } from "@cheese/contracts";
import {
  contextMetadata,
  foldEvents,
  type HandlerContext,
  handleCommand,
  isoNow,
  notFound,
  validationFailed,
} from "@cheese/service-kit";
import { deliveryDecider, deliveryStream } from "../domain/delivery.ts";
import { type WebhookState, webhookDecider, webhookStream } from "../domain/webhook.ts";
import { DELIVERIES, type DeliveryDocument } from "../projections/deliveries.ts";
import { webhookUrlProblem } from "../security/address-policy.ts";
import { generateWebhookSecret } from "../security/secrets.ts";
import type { NotificationDeps } from "./deps.ts";
import { fanOut } from "./fan-out.ts";

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
  deps: NotificationDeps,
  request: WebhookRequest,
  context: HandlerContext,
): Promise<WebhookCreated> {
  const problem = await webhookUrlProblem(request.url, {
    allowPrivate: deps.allowPrivateUrls,
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
  });
  if (problem) {
    throw validationFailed("request body failed validation", [{ field: "url", message: problem }]);
  }
  const secret = request.secret ?? generateWebhookSecret();
  const webhookId = await deps.webhookIds.nextId();
  const registration = {
    webhookId,
    url: request.url,
    events: [...new Set(request.events)],
    description: request.description,
    secret: deps.secrets.seal(secret),
    createdAt: isoNow(deps.clock),
  };
  await handleCommand(
    deps.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Register", registration },
    { metadata: contextMetadata(context) },
  );
  const { url, events, description, createdAt } = registration;
  return { id: webhookId, url, events, secret, description, createdAt };
}

/** Deletes a registration; its deliveries still waiting are cancelled. */
export async function deleteWebhook(deps: NotificationDeps, webhookId: number, context: HandlerContext) {
  const now = isoNow(deps.clock);
  const metadata = contextMetadata(context);
  await handleCommand(
    deps.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Delete", webhookId, now },
    { metadata },
  );
  await deps.projection.catchUp();
  const waiting = await deps.readModels
    .collection<DeliveryDocument>(DELIVERIES)
    .find({ webhookId, status: { $in: ["pending", "retry_scheduled", "dead_lettered"] } });
  for (const delivery of waiting) {
    await handleCommand(
      deps.store,
      deliveryStream(delivery._id),
      deliveryDecider,
      { type: "Cancel", now, reason: "webhook deleted" },
      { metadata },
    ).catch((error: unknown) =>
      context.logger.warn({ err: error, deliveryId: delivery._id }, "cancel failed"),
    );
  }
  return { deleted: true };
}

/** Sends a webhook.test event to this registration only, whatever kinds it subscribed to. */
export async function sendTestEvent(deps: NotificationDeps, webhookId: number, context: HandlerContext) {
  await requireActive(deps, webhookId);
  // No integration event behind it: a fresh id.
  const eventId = `evt_${randomUUID().replaceAll("-", "")}`;
  const recorded = await fanOut(
    deps,
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
export async function replayDeadLetters(deps: NotificationDeps, webhookId: number, context: HandlerContext) {
  await requireActive(deps, webhookId);
  await deps.projection.catchUp();
  const dead = await deps.readModels
    .collection<DeliveryDocument>(DELIVERIES)
    .find({ webhookId, status: "dead_lettered" }, { sort: { createdAt: 1, _id: 1 } });
  const now = isoNow(deps.clock);
  let replayed = 0;
  for (const delivery of dead) {
    const result = await handleCommand(
      deps.store,
      deliveryStream(delivery._id),
      deliveryDecider,
      { type: "Replay", now },
      { metadata: contextMetadata(context) },
    );
    replayed += result.newEvents.length > 0 ? 1 : 0;
  }
  deps.wakeScheduler();
  return { replayed };
}

/** The registration from its own stream (the source of truth), or 404. */
export async function requireActive(deps: NotificationDeps, webhookId: number) {
  const state = foldEvents(
    webhookDecider,
    await deps.store.readStream(webhookStream(webhookId)),
  ) as WebhookState;
  if (state.status !== "active") throw notFound(`webhook ${webhookId} not found`);
  return state.registration;
}
