import * as contracts from "@cheese/contracts";
import { noStore } from "../middleware/no-store.ts";
import { callService, forward } from "../rpc.ts";
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
    use: [noStore],
    request: { body: jsonBody(contracts.WebhookInput) },
    responses: {
      201: jsonResponse("the registration, with its secret (shown only here)", contracts.WebhookCreated),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    // The read-only fields a registration may carry are ignored: the service's request takes none.
    const input = c.req.valid("json");
    const created = await callService(deps, c, contracts.notificationRpc.createWebhook, {
      ...input,
      description: input.description ?? null,
    });
    c.header("Location", `${deps.publicUrl}/v2/webhooks/${created.id}`);
    return c.json(created, 201);
  },
);

const listWebhooks = route(
  {
    method: "get",
    path: "/webhooks",
    operationId: "listWebhooks",
    request: { query: contracts.WebhookListQuery },
    responses: { 200: jsonResponse("a page of registrations", contracts.WebhookList) },
  },
  forward(contracts.notificationRpc.listWebhooks, 200, (c) => c.req.valid("query")),
);

const getWebhook = route(
  {
    method: "get",
    path: "/webhooks/{id}",
    operationId: "getWebhook",
    request: { params: contracts.WebhookIdParam },
    responses: { ...notFound, 200: jsonResponse("the registration", contracts.Webhook) },
  },
  forward(contracts.notificationRpc.getWebhook, 200, (c) => ({ webhookId: c.req.valid("param").id })),
);

const deleteWebhook = route(
  {
    method: "delete",
    path: "/webhooks/{id}",
    operationId: "deleteWebhook",
    request: { params: contracts.WebhookIdParam },
    responses: { ...notFound, 204: { description: "deleted" } },
  },
  forward(contracts.notificationRpc.deleteWebhook, 204, (c) => ({ webhookId: c.req.valid("param").id })),
);

const listDeliveries = route(
  {
    method: "get",
    path: "/webhooks/{id}/deliveries",
    operationId: "listWebhookDeliveries",
    request: { params: contracts.WebhookIdParam, query: contracts.DeliveryListQuery },
    responses: { ...notFound, 200: jsonResponse("a page of deliveries", contracts.DeliveryList) },
  },
  forward(contracts.notificationRpc.listDeliveries, 200, (c) => ({
    webhookId: c.req.valid("param").id,
    ...c.req.valid("query"),
  })),
);

const getDelivery = route(
  {
    method: "get",
    path: "/webhooks/{id}/deliveries/{deliveryId}",
    operationId: "getWebhookDelivery",
    use: [noStore],
    request: { params: contracts.DeliveryIdParam },
    responses: {
      ...deliveryNotFound,
      200: jsonResponse("the delivery", contracts.DeliveryDetail),
    },
  },
  forward(contracts.notificationRpc.getDelivery, 200, (c) => {
    const { id, deliveryId } = c.req.valid("param");
    return { webhookId: id, deliveryId };
  }),
);

const resendDelivery = route(
  {
    method: "post",
    path: "/webhooks/{id}/deliveries/{deliveryId}/resend",
    operationId: "resendWebhookDelivery",
    request: { params: contracts.DeliveryIdParam },
    responses: {
      ...deliveryNotFound,
      202: jsonResponse("the new round is on its way", contracts.ResendResult),
      409: errorResponse("the delivery is still on its way (or cancelled)"),
    },
  },
  forward(contracts.notificationRpc.resendDelivery, 202, (c) => {
    const { id, deliveryId } = c.req.valid("param");
    return { webhookId: id, deliveryId };
  }),
);

const testWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/test",
    operationId: "testWebhook",
    request: { params: contracts.WebhookIdParam },
    responses: {
      ...notFound,
      202: jsonResponse("the test event is on its way", contracts.TestEventSent),
    },
  },
  forward(contracts.notificationRpc.sendTestEvent, 202, (c) => ({ webhookId: c.req.valid("param").id })),
);

const updateWebhook = route(
  {
    method: "patch",
    path: "/webhooks/{id}",
    operationId: "updateWebhook",
    request: { params: contracts.WebhookIdParam, body: jsonBody(contracts.WebhookPatch) },
    responses: {
      ...notFound,
      200: jsonResponse("the registration as changed", contracts.Webhook),
      422: validationErrorResponse,
    },
  },
  // The read-only fields a patch may carry are ignored: the service's request takes none of them.
  forward(contracts.notificationRpc.updateWebhook, 200, (c) => ({
    ...c.req.valid("json"),
    webhookId: c.req.valid("param").id,
  })),
);

const pauseWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/pause",
    operationId: "pauseWebhook",
    request: { params: contracts.WebhookIdParam },
    responses: { ...notFound, 200: jsonResponse("the registration, paused", contracts.Webhook) },
  },
  forward(contracts.notificationRpc.pauseWebhook, 200, (c) => ({ webhookId: c.req.valid("param").id })),
);

const resumeWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/resume",
    operationId: "resumeWebhook",
    request: { params: contracts.WebhookIdParam },
    responses: { ...notFound, 200: jsonResponse("the registration, active", contracts.Webhook) },
  },
  forward(contracts.notificationRpc.resumeWebhook, 200, (c) => ({ webhookId: c.req.valid("param").id })),
);

const rotateSecret = route(
  {
    method: "post",
    path: "/webhooks/{id}/rotate-secret",
    operationId: "rotateWebhookSecret",
    use: [noStore, emptyBodyIsNoBody],
    request: {
      params: contracts.WebhookIdParam,
      body: { required: false, content: json(contracts.RotateSecretInput) },
    },
    responses: {
      ...notFound,
      200: jsonResponse("the new secret (shown only here)", contracts.SecretRotated),
      422: validationErrorResponse,
    },
  },
  forward(contracts.notificationRpc.rotateSecret, 200, (c) => {
    const { secret, overlapSeconds } = c.req.valid("json");
    const overlapMs = overlapSeconds === undefined ? undefined : overlapSeconds * 1000;
    return { webhookId: c.req.valid("param").id, secret, overlapMs };
  }),
);

const replayWebhook = route(
  {
    method: "post",
    path: "/webhooks/{id}/replay",
    operationId: "replayWebhook",
    use: [emptyBodyIsNoBody],
    request: {
      params: contracts.WebhookIdParam,
      body: { required: false, content: json(contracts.ReplayInput) },
    },
    responses: {
      ...notFound,
      202: jsonResponse("how many deliveries were started again", contracts.ReplayResult),
      422: validationErrorResponse,
    },
  },
  forward(contracts.notificationRpc.replayDeliveries, 202, (c) => {
    const { since, until, status } = c.req.valid("json");
    return { webhookId: c.req.valid("param").id, since, until, statuses: status };
  }),
);

const previewFilter = route(
  {
    method: "post",
    path: "/webhooks/filter-preview",
    operationId: "previewWebhookFilter",
    request: { body: jsonBody(contracts.FilterPreviewInput) },
    responses: {
      200: jsonResponse("how the filter judges each event", contracts.FilterPreview),
      422: validationErrorResponse,
    },
  },
  forward(contracts.notificationRpc.previewFilter, 200, (c) => {
    const { filter, events, limit } = c.req.valid("json");
    return { filter, events, limit: limit ?? 50 };
  }),
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
