import * as contracts from "@cheese/contracts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import type { GatewayEnv } from "../env.ts";
import { openApiDocument } from "../openapi.ts";
import { forward } from "../rpc.ts";
import { operatorKey, operatorOnly, operatorResponses } from "./operator.ts";
import { emptyBodyIsNoBody } from "./preconditions.ts";
import { commonResponses, json, jsonResponse, validationErrorResponse } from "./responses.ts";
import { atRoot, type RouteDeps, route } from "./route.ts";

/**
 * What a receiver needs to know, without credentials: the event catalogue, its AsyncAPI
 * document, and the public keys of the v1a signatures; and the operator's key rotation
 * (docs/webhooks.md). The catalogue, the AsyncAPI document and the OpenAPI `webhooks` section are
 * all made from the contracts' `webhookEventData` (`webhook-documents.ts` there).
 */
const tags = ["Webhook events"];

// The bodies are serialised once; the schemas below describe them.
const jsonHeaders = { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-cache" };
type Catalogue = () => { eventTypes: string; asyncApi: string };

const eventTypes = (catalogue: Catalogue) =>
  route(
    {
      method: "get",
      path: "/webhooks/event-types",
      operationId: "listWebhookEventTypes",
      tags,
      access: { public: true },
      responses: {
        ...commonResponses,
        200: jsonResponse("every event kind", contracts.WebhookEventTypeList),
      },
    },
    () => (c) => c.body(catalogue().eventTypes, 200, jsonHeaders) as never,
  );

const asyncApi = (catalogue: Catalogue) =>
  route(
    {
      method: "get",
      path: "/asyncapi.json",
      operationId: "asyncApiDocument",
      tags,
      access: { public: true },
      responses: {
        ...commonResponses,
        200: jsonResponse("an AsyncAPI 3.1 document", contracts.AsyncApiDocument),
      },
    },
    () => (c) => c.body(catalogue().asyncApi, 200, jsonHeaders) as never,
  );

const signingKeys = route(
  {
    method: "get",
    path: "/webhooks/keys",
    operationId: "webhookSigningKeys",
    tags,
    access: { public: true },
    responses: { ...commonResponses, 200: jsonResponse("a JWK set", contracts.WebhookSigningKeySet) },
  },
  forward(contracts.notificationRpc.signingKeys, 200, () => ({})),
);

/** The same key set at the gateway root, outside /v2. */
const wellKnownKeys = {
  method: "get",
  path: "/.well-known/webhook-keys.json",
  operationId: "wellKnownWebhookSigningKeys",
  tags,
  responses: { ...commonResponses, 200: jsonResponse("a JWK set", contracts.WebhookSigningKeySet) },
} as const;

const rotateSigningKey = route(
  {
    method: "post",
    path: "/webhooks/keys/rotate",
    operationId: "rotateWebhookSigningKey",
    tags: ["Webhooks"],
    access: operatorKey,
    use: [operatorOnly("only operator API keys may rotate the webhook signing key"), emptyBodyIsNoBody],
    request: { body: { required: false, content: json(contracts.RotateSigningKeyInput) } },
    responses: {
      ...operatorResponses,
      200: jsonResponse("the new key and until when the previous one signs", contracts.SigningKeyRotated),
      422: validationErrorResponse,
    },
  },
  forward(contracts.notificationRpc.rotateSigningKey, 200, (c) => {
    const { overlapSeconds } = c.req.valid("json");
    return { overlapMs: overlapSeconds === undefined ? undefined : overlapSeconds * 1000 };
  }),
);

/**
 * Registers the catalogue's routes and the OpenAPI `webhooks` section. Before the registration
 * routes: `/webhooks/keys` and `/webhooks/event-types` would otherwise be taken for `/webhooks/{id}`.
 */
export function webhookCatalogueRoutes(
  app: Hono<GatewayEnv>,
  api: OpenAPIHono<GatewayEnv>,
  deps: RouteDeps,
): void {
  // Made on first use, when every route is registered; the same bytes ever after.
  let made: ReturnType<Catalogue> | undefined;
  const catalogue = () => (made ??= contracts.webhookCatalogues(openApiDocument(api)));
  for (const each of [eventTypes(catalogue), asyncApi(catalogue), signingKeys]) each(api, deps);
  atRoot(app, api, wellKnownKeys, forward(contracts.notificationRpc.signingKeys, 200, () => ({}))(deps));
  rotateSigningKey(api, deps);
  for (const operation of contracts.webhookOperations) api.openAPIRegistry.registerWebhook(operation);
}
