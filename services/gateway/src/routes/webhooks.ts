import {
  DeliveryDetail,
  DeliveryIdParam,
  DeliveryList,
  DeliveryListQuery,
  FilterPreview,
  FilterPreviewInput,
  notificationRpc,
  ReplayInput,
  ReplayResult,
  ResendResult,
  RotateSecretInput,
  SecretRotated,
  Webhook,
  WebhookCreated,
  WebhookIdParam,
  WebhookInput,
  WebhookList,
  WebhookListQuery,
  WebhookPatch,
} from "@cheese/contracts";
import { z } from "@hono/zod-openapi";
import { callService } from "../rpc.ts";
import { operatorKey, operatorOnly, operatorResponses } from "./operator.ts";
import { emptyBodyIsNoBody } from "./preconditions.ts";
import { errorResponse, json, jsonBody, jsonResponse, validationErrorResponse } from "./responses.ts";
import { type Route, routes } from "./route.ts";

/** Webhooks are managed with operator API keys only (docs/webhooks.md). */
const route = routes({
  tags: ["Webhooks"],
  access: operatorKey,
  use: [operatorOnly("only operator API keys may manage webhooks")],
  responses: operatorResponses,
});
const notFound = { 404: errorResponse("webhook not found") };
const deliveryNotFound = { 404: errorResponse("webhook or delivery not found") };

const createWebhook = route(
  {
    method: "post",
    path: "/webhooks",
    operationId: "createWebhook",
    summary: "Register a receiving URL and the events wanted",
    description:
      "The secret is generated when absent and shown only in this response. The URL must be https and must " +
      "not resolve to a loopback, private, link-local or metadata address (checked again at each delivery).",
    request: { body: jsonBody(WebhookInput) },
    responses: {
      201: jsonResponse("the registration, with its secret (shown only here)", WebhookCreated),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const { url, events, secret, description, signatureAlgorithms, filter, ordered, rateLimit, auth } =
      c.req.valid("json");
    const created = await callService(deps, c, notificationRpc.createWebhook, {
      url,
      events,
      secret,
      description: description ?? null,
      signatureAlgorithms,
      filter,
      ordered,
      rateLimit,
      auth,
    });
    c.header("Location", `${deps.publicUrl}/v2/webhooks/${created.id}`);
    c.header("Cache-Control", "no-store");
    return c.json(created, 201);
  },
);

const listWebhooks = route(
  {
    method: "get",
    path: "/webhooks",
    operationId: "listWebhooks",
    summary: "List registrations (oldest first, paginated)",
    description:
      "Every registration, oldest first, paginated with limit and cursor. Secrets are never shown again after creation.",
    request: { query: WebhookListQuery },
    responses: { 200: jsonResponse("a page of registrations", WebhookList) },
  },
  (deps) => async (c) =>
    c.json(await callService(deps, c, notificationRpc.listWebhooks, c.req.valid("query")), 200),
);

const getWebhook = route(
  {
    method: "get",
    path: "/webhooks/{id}",
    operationId: "getWebhook",
    summary: "Read a registration (never its secret)",
    description:
      "The registration with its status (active, paused or disabled), why, and since when; never its secret.",
    request: { params: WebhookIdParam },
    responses: { ...notFound, 200: jsonResponse("the registration", Webhook) },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    return c.json(await callService(deps, c, notificationRpc.getWebhook, { webhookId }), 200);
  },
);

const deleteWebhook = route(
  {
    method: "delete",
    path: "/webhooks/{id}",
    operationId: "deleteWebhook",
    summary: "Delete a registration; its waiting deliveries are cancelled",
    description:
      "The registration ends; its waiting and dead-lettered deliveries are cancelled and nothing more is sent to its URL.",
    request: { params: WebhookIdParam },
    responses: { ...notFound, 204: { description: "deleted" } },
  },
  (deps) => async (c) => {
    await callService(deps, c, notificationRpc.deleteWebhook, { webhookId: c.req.valid("param").id });
    return c.body(null, 204);
  },
);

const listDeliveries = route(
  {
    method: "get",
    path: "/webhooks/{id}/deliveries",
    operationId: "listWebhookDeliveries",
    summary: "Deliveries of a registration, newest first, with every attempt",
    description:
      "Newest first, paginated, optionally filtered by status and by event kind (type): each delivery with its event, status, every attempt (status code, error, duration) and when the next attempt is due; dead letters have status dead_lettered. An unknown status or type is a 400 naming the parameter. One delivery's request and answers are at /webhooks/{id}/deliveries/{deliveryId}.",
    request: { params: WebhookIdParam, query: DeliveryListQuery },
    responses: { ...notFound, 200: jsonResponse("a page of deliveries", DeliveryList) },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    const page = await callService(deps, c, notificationRpc.listDeliveries, {
      webhookId,
      ...c.req.valid("query"),
    });
    return c.json(page, 200);
  },
);

const getDelivery = route(
  {
    method: "get",
    path: "/webhooks/{id}/deliveries/{deliveryId}",
    operationId: "getWebhookDelivery",
    summary: "One delivery with every attempt's request and the receiver's answer",
    description:
      "The delivery's body (the same bytes in every attempt) and, per attempt, the URL and headers sent " +
      "(signature headers shown; a receiver credential such as Authorization shown as [redacted]) and the " +
      "receiver's answer: status, headers and the first 4 KiB of its body, or the network error.",
    request: { params: DeliveryIdParam },
    responses: {
      ...deliveryNotFound,
      200: jsonResponse("the delivery", DeliveryDetail),
    },
  },
  (deps) => async (c) => {
    const { id, deliveryId } = c.req.valid("param");
    const delivery = await callService(deps, c, notificationRpc.getDelivery, { webhookId: id, deliveryId });
    c.header("Cache-Control", "no-store");
    return c.json(delivery, 200);
  },
);

const resendDelivery = route(
  {
    method: "post",
    path: "/webhooks/{id}/deliveries/{deliveryId}/resend",
    operationId: "resendWebhookDelivery",
    summary: "Send one delivered or dead-lettered delivery again, as a new round of attempts",
    description:
      "Starts a new round of attempts of this delivery (retried like the first), recorded in the same " +
      "delivery: same webhook-id and body, fresh webhook-timestamp and signatures. A delivery still on " +
      "its way (pending, attempting, retry_scheduled) or cancelled is a 409: wait for it to finish. On a " +
      "paused or disabled registration the new round waits like any delivery.",
    request: { params: DeliveryIdParam },
    responses: {
      ...deliveryNotFound,
      202: jsonResponse("the new round is on its way", ResendResult),
      409: errorResponse("the delivery is still on its way (or cancelled)"),
    },
  },
  (deps) => async (c) => {
    const { id, deliveryId } = c.req.valid("param");
    return c.json(
      await callService(deps, c, notificationRpc.resendDelivery, { webhookId: id, deliveryId }),
      202,
    );
  },
);

const testWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/test",
    operationId: "testWebhook",
    summary: "Send a webhook.test event to the registration",
    description:
      "Sends a webhook.test event to this registration only, whatever kinds it asked for, signed and retried like any other. On a paused or disabled registration the delivery waits.",
    request: { params: WebhookIdParam },
    responses: {
      ...notFound,
      202: {
        description: "the test event is on its way",
        content: json(z.object({ deliveryId: z.number().int().openapi({ format: "int64" }) })),
      },
    },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    return c.json(await callService(deps, c, notificationRpc.sendTestEvent, { webhookId }), 202);
  },
);

const updateWebhook = route(
  {
    method: "patch",
    path: "/webhooks/{id}",
    operationId: "updateWebhook",
    summary: "Change a registration's url, events, filter, throttle, auth or description in place",
    description:
      "Only the fields given change; the rules of creation apply (https, no private address, known kinds). " +
      "Deliveries already waiting go to the new URL. The secret changes only through rotate-secret.",
    request: { params: WebhookIdParam, body: jsonBody(WebhookPatch) },
    responses: {
      ...notFound,
      200: jsonResponse("the registration as changed", Webhook),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    const { url, events, description, signatureAlgorithms, filter, ordered, rateLimit, auth } =
      c.req.valid("json");
    const changes = {
      webhookId,
      url,
      events,
      description,
      signatureAlgorithms,
      filter,
      ordered,
      rateLimit,
      auth,
    };
    return c.json(await callService(deps, c, notificationRpc.updateWebhook, changes), 200);
  },
);

const pauseWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/pause",
    operationId: "pauseWebhook",
    summary: "Pause deliveries: they wait, are not attempted, and keep their attempts",
    description:
      "New events still create deliveries, which wait too. An attempt already in flight finishes. " +
      "Pausing a paused or disabled registration changes nothing.",
    request: { params: WebhookIdParam },
    responses: { ...notFound, 200: jsonResponse("the registration, paused", Webhook) },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    return c.json(await callService(deps, c, notificationRpc.pauseWebhook, { webhookId }), 200);
  },
);

const resumeWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/resume",
    operationId: "resumeWebhook",
    summary: "Resume a paused or disabled registration; what waited goes out, oldest first",
    description:
      "Makes a paused or disabled registration active again: deliveries that waited go out, oldest event first. Resuming an active registration changes nothing.",
    request: { params: WebhookIdParam },
    responses: { ...notFound, 200: jsonResponse("the registration, active", Webhook) },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    return c.json(await callService(deps, c, notificationRpc.resumeWebhook, { webhookId }), 200);
  },
);

const rotateSecret = route(
  {
    method: "post",
    path: "/webhooks/{id}/rotate-secret",
    operationId: "rotateWebhookSecret",
    summary: "Rotate the signing secret without a gap",
    description:
      "The new secret (shown only here) signs every delivery from now on. During the overlap (24 h unless " +
      "overlapSeconds says otherwise, at most 7 days) webhook-signature carries two v1 signatures, new secret " +
      "first, so receivers may switch at any time; X-Cheese-Signature carries the new secret's only.",
    use: [emptyBodyIsNoBody],
    request: { params: WebhookIdParam, body: { required: false, content: json(RotateSecretInput) } },
    responses: {
      ...notFound,
      200: jsonResponse("the new secret (shown only here)", SecretRotated),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    const { secret, overlapSeconds } = c.req.valid("json");
    const rotated = await callService(deps, c, notificationRpc.rotateSecret, {
      webhookId,
      secret,
      overlapMs: overlapSeconds === undefined ? undefined : overlapSeconds * 1000,
    });
    c.header("Cache-Control", "no-store");
    return c.json(rotated, 200);
  },
);

const replayWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/replay",
    operationId: "replayWebhook",
    summary: "Replay finished deliveries: the dead letter queue, or a window of time",
    description:
      "Without a body, every dead-lettered delivery starts again. With one, the deliveries created in " +
      "[since, until) whose status is in `status` (dead_lettered when absent) do. Each starts a new round " +
      "of attempts with its original event id and body (receivers deduplicate on webhook-id). Deliveries " +
      "still waiting or in flight are left alone. One call replays at most WEBHOOK_REPLAY_MAX (1000) " +
      "deliveries; a window holding more is a 422: narrow it.",
    use: [emptyBodyIsNoBody],
    request: { params: WebhookIdParam, body: { required: false, content: json(ReplayInput) } },
    responses: {
      ...notFound,
      202: jsonResponse("how many deliveries were started again", ReplayResult),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const webhookId = c.req.valid("param").id;
    const { since, until, status } = c.req.valid("json");
    const replay = { webhookId, since, until, statuses: status };
    return c.json(await callService(deps, c, notificationRpc.replayDeliveries, replay), 202);
  },
);

const previewFilter = route(
  {
    method: "post",
    path: "/webhooks/filter-preview",
    operationId: "previewWebhookFilter",
    summary: "Try a payload filter on the most recent recorded events before saving it",
    description:
      "Evaluates the CEL filter on the most recent events recorded for delivery (those of a kind some " +
      "registration wanted), of the kinds in `events` (every kind when absent), newest first, at most `limit` " +
      "(50 when absent, at most 500). Nothing is delivered or saved. A filter that does not parse or " +
      "type-check is a 422 naming filter, as on POST /webhooks.",
    request: { body: jsonBody(FilterPreviewInput) },
    responses: {
      200: jsonResponse("how the filter judges each event", FilterPreview),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const { filter, events, limit } = c.req.valid("json");
    const preview = { filter, events, limit: limit ?? 50 };
    return c.json(await callService(deps, c, notificationRpc.previewFilter, preview), 200);
  },
);

export const webhooksRoutes: Route[] = [
  createWebhook,
  listWebhooks,
  getWebhook,
  deleteWebhook,
  listDeliveries,
  getDelivery,
  resendDelivery,
  testWebhook,
  updateWebhook,
  pauseWebhook,
  resumeWebhook,
  rotateSecret,
  replayWebhook,
  previewFilter,
];
