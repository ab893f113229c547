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
