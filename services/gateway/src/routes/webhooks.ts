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
import { createRoute, type OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { callService } from "../rpc.ts";
import { operatorResponses, operatorRoute } from "./operator.ts";
import { emptyBodyIsNoBody } from "./preconditions.ts";
import { errorResponse, validationErrorResponse } from "./responses.ts";

/** Webhooks are managed with operator API keys only (docs/webhooks.md). */
const webhookRoute = <R extends RouteConfig>(
  deps: GatewayDeps,
  route: R,
  ...middleware: MiddlewareHandler<GatewayEnv>[]
): R => operatorRoute(deps, route, "only operator API keys may manage webhooks", ...middleware);

const authResponses = operatorResponses;
const notFound = { 404: errorResponse("webhook not found") };
const json = <S extends z.ZodType>(schema: S) => ({ "application/json": { schema } });

function createWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks",
        operationId: "createWebhook",
        tags: ["Webhooks"],
        summary: "Register a receiving URL and the events wanted",
        description:
          "The secret is generated when absent and shown only in this response. The URL must be https and must " +
          "not resolve to a loopback, private, link-local or metadata address (checked again at each delivery).",
        request: { body: { required: true, content: json(WebhookInput) } },
        responses: {
          ...authResponses,
          201: {
            description: "the registration, with its secret (shown only here)",
            content: json(WebhookCreated),
          },
          422: validationErrorResponse,
        },
      }),
    ),
    async (c) => {
      const { url, events, secret, description, signatureAlgorithms, filter, ordered } = c.req.valid("json");
      const created = await callService(deps, c, notificationRpc.createWebhook, {
        url,
        events,
        ...(secret !== undefined ? { secret } : {}),
        description: description ?? null,
        ...(signatureAlgorithms !== undefined ? { signatureAlgorithms } : {}),
        ...(filter !== undefined ? { filter } : {}),
        ...(ordered !== undefined ? { ordered } : {}),
      });
      c.header("Location", `${deps.publicUrl}/v2/webhooks/${created.id}`);
      c.header("Cache-Control", "no-store");
      return c.json(created, 201);
    },
  );
}

function listWebhooks(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "get",
        path: "/webhooks",
        operationId: "listWebhooks",
        tags: ["Webhooks"],
        summary: "List registrations (oldest first, paginated)",
        description:
          "Every registration, oldest first, paginated with limit and cursor. Secrets are never shown again after creation.",
        request: { query: WebhookListQuery },
        responses: {
          ...authResponses,
          200: { description: "a page of registrations", content: json(WebhookList) },
        },
      }),
    ),
    async (c) => {
      const { cursor, limit } = c.req.valid("query");
      return c.json(await callService(deps, c, notificationRpc.listWebhooks, { cursor, limit }), 200);
    },
  );
}

function getWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "get",
        path: "/webhooks/{id}",
        operationId: "getWebhook",
        tags: ["Webhooks"],
        summary: "Read a registration (never its secret)",
        description:
          "The registration with its status (active, paused or disabled), why, and since when; never its secret.",
        request: { params: WebhookIdParam },
        responses: {
          ...authResponses,
          ...notFound,
          200: { description: "the registration", content: json(Webhook) },
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await callService(deps, c, notificationRpc.getWebhook, { webhookId: id }), 200);
    },
  );
}

function deleteWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "delete",
        path: "/webhooks/{id}",
        operationId: "deleteWebhook",
        tags: ["Webhooks"],
        summary: "Delete a registration; its waiting deliveries are cancelled",
        description:
          "The registration ends; its waiting and dead-lettered deliveries are cancelled and nothing more is sent to its URL.",
        request: { params: WebhookIdParam },
        responses: { ...authResponses, ...notFound, 204: { description: "deleted" } },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      await callService(deps, c, notificationRpc.deleteWebhook, { webhookId: id });
      return c.body(null, 204);
    },
  );
}

function listDeliveries(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "get",
        path: "/webhooks/{id}/deliveries",
        operationId: "listWebhookDeliveries",
        tags: ["Webhooks"],
        summary: "Deliveries of a registration, newest first, with every attempt",
        description:
          "Newest first, paginated, optionally filtered by status and by event kind (type): each delivery with its event, status, every attempt (status code, error, duration) and when the next attempt is due; dead letters have status dead_lettered. An unknown status or type is a 400 naming the parameter. One delivery's request and answers are at /webhooks/{id}/deliveries/{deliveryId}.",
        request: { params: WebhookIdParam, query: DeliveryListQuery },
        responses: {
          ...authResponses,
          ...notFound,
          200: { description: "a page of deliveries", content: json(DeliveryList) },
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      const { cursor, limit, status, type } = c.req.valid("query");
      const page = await callService(deps, c, notificationRpc.listDeliveries, {
        webhookId: id,
        cursor,
        limit,
        status,
        type,
      });
      return c.json(page, 200);
    },
  );
}

const deliveryNotFound = { 404: errorResponse("webhook or delivery not found") };

function getDelivery(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "get",
        path: "/webhooks/{id}/deliveries/{deliveryId}",
        operationId: "getWebhookDelivery",
        tags: ["Webhooks"],
        summary: "One delivery with every attempt's request and the receiver's answer",
        description:
          "The delivery's body (the same bytes in every attempt) and, per attempt, the URL and headers sent " +
          "(signature headers shown; a receiver credential such as Authorization shown as [redacted]) and the " +
          "receiver's answer: status, headers and the first 4 KiB of its body, or the network error.",
        request: { params: DeliveryIdParam },
        responses: {
          ...authResponses,
          ...deliveryNotFound,
          200: { description: "the delivery", content: json(DeliveryDetail) },
        },
      }),
    ),
    async (c) => {
      const { id, deliveryId } = c.req.valid("param");
      const delivery = await callService(deps, c, notificationRpc.getDelivery, { webhookId: id, deliveryId });
      c.header("Cache-Control", "no-store");
      return c.json(delivery, 200);
    },
  );
}

function resendDelivery(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/{id}/deliveries/{deliveryId}/resend",
        operationId: "resendWebhookDelivery",
        tags: ["Webhooks"],
        summary: "Send one delivered or dead-lettered delivery again, as a new round of attempts",
        description:
          "Starts a new round of attempts of this delivery (retried like the first), recorded in the same " +
          "delivery: same webhook-id and body, fresh webhook-timestamp and signatures. A delivery still on " +
          "its way (pending, attempting, retry_scheduled) or cancelled is a 409: wait for it to finish. On a " +
          "paused or disabled registration the new round waits like any delivery.",
        request: { params: DeliveryIdParam },
        responses: {
          ...authResponses,
          ...deliveryNotFound,
          202: { description: "the new round is on its way", content: json(ResendResult) },
          409: errorResponse("the delivery is still on its way (or cancelled)"),
        },
      }),
    ),
    async (c) => {
      const { id, deliveryId } = c.req.valid("param");
      return c.json(
        await callService(deps, c, notificationRpc.resendDelivery, { webhookId: id, deliveryId }),
        202,
      );
    },
  );
}

function testWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/{id}/test",
        operationId: "testWebhook",
        tags: ["Webhooks"],
        summary: "Send a webhook.test event to the registration",
        description:
          "Sends a webhook.test event to this registration only, whatever kinds it asked for, signed and retried like any other. On a paused or disabled registration the delivery waits.",
        request: { params: WebhookIdParam },
        responses: {
          ...authResponses,
          ...notFound,
          202: {
            description: "the test event is on its way",
            content: json(z.object({ deliveryId: z.number().int().openapi({ format: "int64" }) })),
          },
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await callService(deps, c, notificationRpc.sendTestEvent, { webhookId: id }), 202);
    },
  );
}

function updateWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "patch",
        path: "/webhooks/{id}",
        operationId: "updateWebhook",
        tags: ["Webhooks"],
        summary: "Change a registration's url, events or description in place",
        description:
          "Only the fields given change; the rules of creation apply (https, no private address, known kinds). " +
          "Deliveries already waiting go to the new URL. The secret changes only through rotate-secret.",
        request: { params: WebhookIdParam, body: { required: true, content: json(WebhookPatch) } },
        responses: {
          ...authResponses,
          ...notFound,
          200: { description: "the registration as changed", content: json(Webhook) },
          422: validationErrorResponse,
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      const { url, events, description, signatureAlgorithms, filter, ordered } = c.req.valid("json");
      const webhook = await callService(deps, c, notificationRpc.updateWebhook, {
        webhookId: id,
        ...(url !== undefined ? { url } : {}),
        ...(events !== undefined ? { events } : {}),
        ...(description !== undefined ? { description } : {}),
        ...(signatureAlgorithms !== undefined ? { signatureAlgorithms } : {}),
        ...(filter !== undefined ? { filter } : {}),
        ...(ordered !== undefined ? { ordered } : {}),
      });
      return c.json(webhook, 200);
    },
  );
}

function pauseWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/{id}/pause",
        operationId: "pauseWebhook",
        tags: ["Webhooks"],
        summary: "Pause deliveries: they wait, are not attempted, and keep their attempts",
        description:
          "New events still create deliveries, which wait too. An attempt already in flight finishes. " +
          "Pausing a paused or disabled registration changes nothing.",
        request: { params: WebhookIdParam },
        responses: {
          ...authResponses,
          ...notFound,
          200: { description: "the registration, paused", content: json(Webhook) },
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await callService(deps, c, notificationRpc.pauseWebhook, { webhookId: id }), 200);
    },
  );
}

function resumeWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/{id}/resume",
        operationId: "resumeWebhook",
        tags: ["Webhooks"],
        summary: "Resume a paused or disabled registration; what waited goes out, oldest first",
        description:
          "Makes a paused or disabled registration active again: deliveries that waited go out, oldest event first. Resuming an active registration changes nothing.",
        request: { params: WebhookIdParam },
        responses: {
          ...authResponses,
          ...notFound,
          200: { description: "the registration, active", content: json(Webhook) },
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await callService(deps, c, notificationRpc.resumeWebhook, { webhookId: id }), 200);
    },
  );
}

function rotateSecret(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/{id}/rotate-secret",
        operationId: "rotateWebhookSecret",
        tags: ["Webhooks"],
        summary: "Rotate the signing secret without a gap",
        description:
          "The new secret (shown only here) signs every delivery from now on. During the overlap (24 h unless " +
          "overlapSeconds says otherwise, at most 7 days) webhook-signature carries two v1 signatures, new secret " +
          "first, so receivers may switch at any time; X-Cheese-Signature carries the new secret's only.",
        request: { params: WebhookIdParam, body: { required: false, content: json(RotateSecretInput) } },
        responses: {
          ...authResponses,
          ...notFound,
          200: { description: "the new secret (shown only here)", content: json(SecretRotated) },
          422: validationErrorResponse,
        },
      }),
      emptyBodyIsNoBody,
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      const { secret, overlapSeconds } = c.req.valid("json");
      const rotated = await callService(deps, c, notificationRpc.rotateSecret, {
        webhookId: id,
        ...(secret !== undefined ? { secret } : {}),
        ...(overlapSeconds !== undefined ? { overlapMs: overlapSeconds * 1000 } : {}),
      });
      c.header("Cache-Control", "no-store");
      return c.json(rotated, 200);
    },
  );
}

function replayWebhook(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/{id}/replay",
        operationId: "replayWebhook",
        tags: ["Webhooks"],
        summary: "Replay finished deliveries: the dead letter queue, or a window of time",
        description:
          "Without a body, every dead-lettered delivery starts again. With one, the deliveries created in " +
          "[since, until) whose status is in `status` (dead_lettered when absent) do. Each starts a new round " +
          "of attempts with its original event id and body (receivers deduplicate on webhook-id). Deliveries " +
          "still waiting or in flight are left alone. One call replays at most WEBHOOK_REPLAY_MAX (1000) " +
          "deliveries; a window holding more is a 422: narrow it.",
        request: { params: WebhookIdParam, body: { required: false, content: json(ReplayInput) } },
        responses: {
          ...authResponses,
          ...notFound,
          202: { description: "how many deliveries were started again", content: json(ReplayResult) },
          422: validationErrorResponse,
        },
      }),
      emptyBodyIsNoBody,
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      const { since, until, status } = c.req.valid("json");
      const result = await callService(deps, c, notificationRpc.replayDeliveries, {
        webhookId: id,
        ...(since !== undefined ? { since } : {}),
        ...(until !== undefined ? { until } : {}),
        ...(status !== undefined ? { statuses: status } : {}),
      });
      return c.json(result, 202);
    },
  );
}

function previewFilter(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    webhookRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/filter-preview",
        operationId: "previewWebhookFilter",
        tags: ["Webhooks"],
        summary: "Try a payload filter on the most recent recorded events before saving it",
        description:
          "Evaluates the CEL filter on the most recent events recorded for delivery (those of a kind some " +
          "registration wanted), of the kinds in `events` (every kind when absent), newest first, at most `limit` " +
          "(50 when absent, at most 500). Nothing is delivered or saved. A filter that does not parse or " +
          "type-check is a 422 naming filter, as on POST /webhooks.",
        request: { body: { required: true, content: json(FilterPreviewInput) } },
        responses: {
          ...authResponses,
          200: { description: "how the filter judges each event", content: json(FilterPreview) },
          422: validationErrorResponse,
        },
      }),
    ),
    async (c) => {
      const { filter, events, limit } = c.req.valid("json");
      const preview = await callService(deps, c, notificationRpc.previewFilter, {
        filter,
        ...(events !== undefined ? { events } : {}),
        limit: limit ?? 50,
      });
      return c.json(preview, 200);
    },
  );
}

export function webhooksRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  createWebhook(api, deps);
  listWebhooks(api, deps);
  getWebhook(api, deps);
  deleteWebhook(api, deps);
  listDeliveries(api, deps);
  getDelivery(api, deps);
  resendDelivery(api, deps);
  testWebhook(api, deps);
  updateWebhook(api, deps);
  pauseWebhook(api, deps);
  resumeWebhook(api, deps);
  rotateSecret(api, deps);
  replayWebhook(api, deps);
  previewFilter(api, deps);
}
