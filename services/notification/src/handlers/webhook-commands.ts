import { randomUUID } from "node:crypto";
import type {
  SecretRotated,
  SigningKeyRotated,
  Webhook,
  WebhookAuthInput,
  WebhookCreated,
  WebhookEventKind,
  WebhookRateLimit,
  WebhookSignatureAlgorithm,
} from "@cheese/contracts";
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
import { checkFilter } from "../domain/filter.ts";
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
import { sealAuth } from "../security/receiver-auth.ts";
import { generateWebhookSecret } from "../security/secrets.ts";
import { DEFAULT_KEY_OVERLAP_MS } from "../security/signing-keys.ts";
import { deliveryHistory } from "./delivery-history.ts";
import type { NotificationDeps } from "./deps.ts";
import { fanOut } from "./fan-out.ts";
import { getWebhook } from "./webhook-queries.ts";

export interface WebhookRequest {
  url: string;
  events: WebhookEventKind[];
  secret?: string | undefined;
  description: string | null;
  signatureAlgorithms?: WebhookSignatureAlgorithm[] | undefined;
  filter?: string | null | undefined;
  ordered?: boolean | undefined;
  rateLimit?: WebhookRateLimit | null | undefined;
  auth?: WebhookAuthInput | null | undefined;
}

const iso = (deps: NotificationDeps) => isoNow(deps.clock);

/** The URL rules of creation: scheme, and every address its name resolves to. 422 naming the field. */
async function checkUrl(deps: NotificationDeps, url: string, field = "url"): Promise<void> {
  const problem = await webhookUrlProblem(url, {
    allowPrivate: deps.allowPrivateUrls,
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
  });
  if (problem) {
    throw validationFailed("request body failed validation", [{ field, message: problem }]);
  }
}

/** The receiver auth, sealed; an OAuth2 token URL passes the rules of the registration's URL. */
async function sealedAuth(deps: NotificationDeps, auth: WebhookAuthInput | null) {
  if (auth === null) return null;
  if (auth.type === "oauth2_client_credentials") await checkUrl(deps, auth.tokenUrl, "auth.tokenUrl");
  return sealAuth(deps.secrets, auth);
}

/**
 * Registers a receiver. The URL is checked here and again at each attempt. The secret is
 * returned this once; events hold it sealed.
 */
export async function createWebhook(
  deps: NotificationDeps,
  request: WebhookRequest,
  context: HandlerContext,
): Promise<WebhookCreated> {
  await checkUrl(deps, request.url);
  const events = [...new Set(request.events)];
  if (request.filter) checkFilter(request.filter, events);
  const auth = request.auth ? await sealedAuth(deps, request.auth) : null;
  const secret = request.secret ?? generateWebhookSecret();
  // Its events consumed before it is recorded: every one published after its 201 reaches it.
  await deps.wantKinds(events);
  const webhookId = await deps.webhookIds.nextId();
  const registration = {
    webhookId,
    url: request.url,
    events,
    description: request.description,
    secret: deps.secrets.seal(secret),
    signatureAlgorithms: [
      ...new Set<WebhookSignatureAlgorithm>(request.signatureAlgorithms ?? ["hmac-sha256"]),
    ],
    ...(request.filter ? { filter: request.filter } : {}),
    ...(request.ordered ? { ordered: true } : {}),
    ...(request.rateLimit ? { rateLimit: request.rateLimit } : {}),
    ...(auth ? { auth } : {}),
    createdAt: iso(deps),
  };
  await handleCommand(
    deps.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Register", registration },
    { metadata: contextMetadata(context) },
  );
  await deps.webhooks.catchUp();
  return { ...(await getWebhook(deps, webhookId)), secret };
}

/** Runs a command on a registration, then answers it as GET /webhooks/{id} would. */
async function changeWebhook(
  deps: NotificationDeps,
  command: Exclude<WebhookCommand, { type: "Register" }>,
  context: HandlerContext,
): Promise<Webhook> {
  await handleCommand(deps.store, webhookStream(command.webhookId), webhookDecider, command, {
    metadata: contextMetadata(context),
  });
  return getWebhook(deps, command.webhookId);
}

/**
 * PATCH: url (checked as at creation), events, description, filter (checked against the kinds it
 * will see); only what differs is recorded.
 */
export async function updateWebhook(
  deps: NotificationDeps,
  request: Omit<RegistrationChanges, "auth"> & {
    webhookId: number;
    auth?: WebhookAuthInput | null | undefined;
  },
  context: HandlerContext,
): Promise<Webhook> {
  const { webhookId, auth, ...wanted } = request;
  const live = await requireLive(deps, webhookId);
  if (wanted.url !== undefined) await checkUrl(deps, wanted.url);
  const changes: RegistrationChanges =
    auth === undefined ? wanted : { ...wanted, auth: await sealedAuth(deps, auth) };
  const filter = changes.filter !== undefined ? changes.filter : live.registration.filter;
  if (filter && (changes.filter !== undefined || changes.events !== undefined))
    checkFilter(filter, changes.events ?? live.registration.events);
  if (changes.events) await deps.wantKinds(changes.events);
  return changeWebhook(deps, { type: "Update", webhookId, changes, now: iso(deps) }, context);
}

/** Deliveries wait while paused; attempts already in flight finish and are recorded. */
export function pauseWebhook(deps: NotificationDeps, webhookId: number, context: HandlerContext) {
  return changeWebhook(deps, { type: "Pause", webhookId, now: iso(deps) }, context);
}

/** A paused or disabled registration becomes active; what waited goes out, oldest first. */
export async function resumeWebhook(deps: NotificationDeps, webhookId: number, context: HandlerContext) {
  const webhook = await changeWebhook(deps, { type: "Resume", webhookId, now: iso(deps) }, context);
  deps.wakeScheduler();
  return webhook;
}

/** A new system signing key signs from now on; the previous one signs beside it until the overlap ends. */
export function rotateSigningKey(
  deps: NotificationDeps,
  request: { overlapMs?: number | undefined },
  context: HandlerContext,
): Promise<SigningKeyRotated> {
  return deps.signingKeys.rotate(request.overlapMs ?? DEFAULT_KEY_OVERLAP_MS, contextMetadata(context));
}

/** A new secret signs from now on; the previous one signs beside it until the overlap ends. */
export async function rotateSecret(
  deps: NotificationDeps,
  request: { webhookId: number; secret?: string | undefined; overlapMs?: number | undefined },
  context: HandlerContext,
): Promise<SecretRotated> {
  const secret = request.secret ?? generateWebhookSecret();
  const { state } = await handleCommand(
    deps.store,
    webhookStream(request.webhookId),
    webhookDecider,
    {
      type: "RotateSecret",
      webhookId: request.webhookId,
      secret: deps.secrets.seal(secret),
      overlapMs: request.overlapMs ?? DEFAULT_ROTATION_OVERLAP_MS,
      now: iso(deps),
    },
    { metadata: contextMetadata(context) },
  );
  return { secret, previousSecretExpiresAt: (state as LiveWebhook).previousSecret!.expiresAt };
}

/** Deletes a registration; its deliveries still waiting or dead-lettered are cancelled. */
export async function deleteWebhook(deps: NotificationDeps, webhookId: number, context: HandlerContext) {
  // Still loading the history: 503 before anything changed, so a retry finds the registration.
  await deliveryHistory(deps);
  const now = iso(deps);
  const metadata = contextMetadata(context);
  await handleCommand(
    deps.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: "Delete", webhookId, now },
    { metadata },
  );
  await deps.deliveries.catchUp();
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
  await requireLive(deps, webhookId);
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
 * [since, until). More than `replayMax` matching is a 422: narrow the window. A call starts a
 * delivery only in the round it found finished, so two calls that found it in the same round
 * start it once, whichever acts last.
 */
export async function replayDeliveries(
  deps: NotificationDeps,
  request: {
    webhookId: number;
    since?: string | undefined;
    until?: string | undefined;
    statuses?: ReplayableStatus[] | undefined;
  },
  context: HandlerContext,
) {
  const { webhookId } = request;
  await requireLive(deps, webhookId);
  const statuses = request.statuses ?? ["dead_lettered"];
  const window = replayWindow(request.since, request.until);
  const filter: Record<string, unknown> = { webhookId, status: { $in: statuses } };
  if (window.since || window.until) {
    filter.createdAt = {
      ...(window.since ? { $gte: window.since } : {}),
      ...(window.until ? { $lt: window.until } : {}),
    };
  }
  await deliveryHistory(deps);
  const deliveries = deps.readModels.collection<DeliveryDocument>(DELIVERIES);
  checkReplayBound(await deliveries.count(filter), deps.replayMax);
  const matching = await deliveries.find(filter, { sort: { createdAt: 1, _id: 1 } });
  const now = iso(deps);
  let replayed = 0;
  for (const delivery of matching) {
    const result = await handleCommand(
      deps.store,
      deliveryStream(delivery._id),
      deliveryDecider,
      { type: "Replay", now, statuses, round: delivery.round },
      { metadata: contextMetadata(context) },
    );
    replayed += result.newEvents.length > 0 ? 1 : 0;
  }
  deps.wakeScheduler();
  return { replayed };
}

/**
 * Starts one delivery again, as a new round of attempts with its original event id and body
 * (fresh signatures and timestamps at each attempt): 404 if the registration or the delivery is
 * unknown, 409 while the delivery is still on its way (pending, attempting, retry scheduled) or
 * cancelled. The delivery's own stream decides, so two resends of the same round start one.
 */
export async function resendDelivery(
  deps: NotificationDeps,
  request: { webhookId: number; deliveryId: number },
  context: HandlerContext,
) {
  await requireLive(deps, request.webhookId);
  const events = await deps.store.readStream(deliveryStream(request.deliveryId));
  const found = foldEvents(deliveryDecider, events);
  if (found.status === "absent" || found.webhookId !== request.webhookId)
    throw notFound(`delivery ${request.deliveryId} of webhook ${request.webhookId} not found`);
  const result = await handleCommand(
    deps.store,
    deliveryStream(request.deliveryId),
    deliveryDecider,
    { type: "Resend", now: iso(deps) },
    { metadata: contextMetadata(context) },
  );
  deps.wakeScheduler();
  const round = result.state.status === "absent" ? 0 : result.state.round;
  return { deliveryId: request.deliveryId, round };
}

/** The registration from its own stream (the source of truth), or 404 once deleted. */
export async function requireLive(deps: NotificationDeps, webhookId: number): Promise<LiveWebhook> {
  const state = foldEvents(
    webhookDecider,
    await deps.store.readStream(webhookStream(webhookId)),
  ) as WebhookState;
  if (state.status === "absent" || state.status === "deleted")
    throw notFound(`webhook ${webhookId} not found`);
  return state;
}
