import { randomUUID } from "node:crypto";
import type { SecretRotated, Webhook, WebhookCreated, WebhookEventKind } from "@cheese/contracts";
import {
  contextMetadata,
  foldEvents,
  type HandlerContext,
  handleCommand,
  isoNow,
  notFound,
  validationFailed,
} from "@cheese/service-kit";
import { deliveryDecider, deliveryStream, type ReplayableStatus } from "../domain/delivery.ts";
import { checkReplayBound, replayWindow } from "../domain/replay.ts";
import {
  DEFAULT_ROTATION_OVERLAP_MS,
  type LiveWebhook,
  type RegistrationChanges,
  type WebhookCommand,
  type WebhookState,
  webhookDecider,
  webhookStream,
} from "../domain/webhook.ts";
import { DELIVERIES, type DeliveryDocument } from "../projections/deliveries.ts";
import { webhookUrlProblem } from "../security/address-policy.ts";
import { generateWebhookSecret } from "../security/secrets.ts";
import { deliveryHistory } from "./delivery-history.ts";
import { fanOut } from "./fan-out.ts";
import type { NotificationSide } from "./side.ts";
import { getWebhook } from "./webhook-queries.ts";

export interface WebhookRequest {
  url: string;
  events: WebhookEventKind[];
  secret?: string | undefined;
  description: string | null;
}

const iso = (side: NotificationSide) => isoNow(side.clock);

/** The URL rules of creation: scheme, and every address its name resolves to. 422 naming `url`. */
async function checkUrl(side: NotificationSide, url: string): Promise<void> {
  const problem = await webhookUrlProblem(url, {
    allowPrivate: side.allowPrivateUrls,
    ...(side.resolve ? { resolve: side.resolve } : {}),
  });
  if (problem) {
    throw validationFailed("request body failed validation", [{ field: "url", message: problem }]);
  }
}

/**
 * Registers a receiver. The URL is checked here and again at each attempt. The secret is
 * returned this once; events hold it sealed.
 */
export async function createWebhook(
  side: NotificationSide,
  request: WebhookRequest,
  context: HandlerContext,
): Promise<WebhookCreated> {
  await checkUrl(side, request.url);
  const secret = request.secret ?? generateWebhookSecret();
  const webhookId = await deps.webhookIds.nextId();
  const registration = {
    webhookId,
    url: request.url,
    events: [...new Set(request.events)],
    description: request.description,
    secret: side.secrets.seal(secret),
    createdAt: iso(side),
  };
  await handleCommand(
    deps.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Register", registration },
    { metadata: contextMetadata(context) },
  );
  await side.webhooks.catchUp();
  return { ...(await getWebhook(side, webhookId)), secret };
}

/** Runs a command on a registration, then answers it as GET /webhooks/{id} would. */
async function changeWebhook(
  side: NotificationSide,
  command: Exclude<WebhookCommand, { type: "Register" }>,
  context: HandlerContext,
): Promise<Webhook> {
  await handleCommand(side.store, webhookStream(command.webhookId), webhookDecider, command, {
    metadata: contextMetadata(context),
  });
  return getWebhook(side, command.webhookId);
}

/** PATCH: url (checked as at creation), events, description; only what differs is recorded. */
export async function updateWebhook(
  side: NotificationSide,
  request: RegistrationChanges & { webhookId: number },
  context: HandlerContext,
): Promise<Webhook> {
  const { webhookId, ...changes } = request;
  await requireLive(side, webhookId);
  if (changes.url !== undefined) await checkUrl(side, changes.url);
  return changeWebhook(side, { type: "Update", webhookId, changes, now: iso(side) }, context);
}

/** Deliveries wait while paused; attempts already in flight finish and are recorded. */
export function pauseWebhook(side: NotificationSide, webhookId: number, context: HandlerContext) {
  return changeWebhook(side, { type: "Pause", webhookId, now: iso(side) }, context);
}

/** A paused or disabled registration becomes active; what waited goes out, oldest first. */
export async function resumeWebhook(side: NotificationSide, webhookId: number, context: HandlerContext) {
  const webhook = await changeWebhook(side, { type: "Resume", webhookId, now: iso(side) }, context);
  side.wakeScheduler();
  return webhook;
}

/** A new secret signs from now on; the previous one signs beside it until the overlap ends. */
export async function rotateSecret(
  side: NotificationSide,
  request: { webhookId: number; secret?: string | undefined; overlapMs?: number | undefined },
  context: HandlerContext,
): Promise<SecretRotated> {
  const secret = request.secret ?? generateWebhookSecret();
  const { state } = await handleCommand(
    side.store,
    webhookStream(request.webhookId),
    webhookDecider,
    {
      type: "RotateSecret",
      webhookId: request.webhookId,
      secret: side.secrets.seal(secret),
      overlapMs: request.overlapMs ?? DEFAULT_ROTATION_OVERLAP_MS,
      now: iso(side),
    },
    { metadata: contextMetadata(context) },
  );
  return { secret, previousSecretExpiresAt: (state as LiveWebhook).previousSecret!.expiresAt };
}

/** Deletes a registration; its deliveries still waiting or dead-lettered are cancelled. */
export async function deleteWebhook(side: NotificationSide, webhookId: number, context: HandlerContext) {
  const now = iso(side);
  const metadata = contextMetadata(context);
  await handleCommand(
    deps.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Delete", webhookId, now },
    { metadata },
  );
  await deliveryHistory(side);
  const waiting = await side.readModels
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
export async function sendTestEvent(side: NotificationSide, webhookId: number, context: HandlerContext) {
  await requireLive(side, webhookId);
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
    { only: [webhookId] },
  );
  return { deliveryId: recorded!.deliveries[0]!.deliveryId };
}

/**
 * Starts the registration's finished deliveries again, each as a new round of attempts with its
 * original event id and body: those in `statuses` (dead-lettered by default) created in
 * [since, until). More than `replayMax` matching is a 422: narrow the window.
 */
export async function replayDeliveries(
  side: NotificationSide,
  request: {
    webhookId: number;
    since?: string | undefined;
    until?: string | undefined;
    statuses?: ReplayableStatus[] | undefined;
  },
  context: HandlerContext,
) {
  const { webhookId } = request;
  await requireLive(side, webhookId);
  const statuses = request.statuses ?? ["dead_lettered"];
  const window = replayWindow(request.since, request.until);
  const filter: Record<string, unknown> = { webhookId, status: { $in: statuses } };
  if (window.since || window.until) {
    filter.createdAt = {
      ...(window.since ? { $gte: window.since } : {}),
      ...(window.until ? { $lt: window.until } : {}),
    };
  }
  await deliveryHistory(side);
  const deliveries = side.readModels.collection<DeliveryDocument>(DELIVERIES);
  checkReplayBound(await deliveries.count(filter), side.replayMax);
  const matching = await deliveries.find(filter, { sort: { createdAt: 1, _id: 1 } });
  const now = iso(side);
  let replayed = 0;
  for (const delivery of matching) {
    const result = await handleCommand(
      deps.store,
      deliveryStream(delivery._id),
      deliveryDecider,
      { type: "Replay", now, statuses },
      { metadata: contextMetadata(context) },
    );
    replayed += result.newEvents.length > 0 ? 1 : 0;
  }
  deps.wakeScheduler();
  return { replayed };
}

/** The registration from its own stream (the source of truth), or 404 once deleted. */
export async function requireLive(side: NotificationSide, webhookId: number): Promise<LiveWebhook> {
  const state = foldEvents(
    webhookDecider,
    await deps.store.readStream(webhookStream(webhookId)),
  ) as WebhookState;
  if (state.status === "absent" || state.status === "deleted")
    throw notFound(`webhook ${webhookId} not found`);
  return state;
}
