import {
  notificationRpc,
  RotateSigningKeyInput,
  SigningKeyRotated,
  WebhookEventTypeList,
  WebhookSigningKeySet,
  webhookDeliveryHeaders,
  webhookEnvelope,
  webhookEventData,
  webhookEventKinds,
} from "@cheese/contracts";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Hono } from "hono";
import { secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { openApiDocument } from "../openapi.ts";
import { callService } from "../rpc.ts";
import { operatorResponses, operatorRoute } from "./operator.ts";
import { emptyBodyIsNoBody } from "./preconditions.ts";
import { commonResponses, validationErrorResponse } from "./responses.ts";

/**
 * What a receiver needs to know, without credentials: the event catalogue, its AsyncAPI
 * document, and the public keys of the v1a signatures; and the operator's key rotation
 * (docs/webhooks.md). The catalogue, the AsyncAPI document and the OpenAPI `webhooks` section are
 * all made from the contracts' `webhookEventData`, through the OpenAPI document's schemas.
 */

// biome-ignore lint/suspicious/noExplicitAny: generated JSON Schemas are walked generically
type Json = any;

const json = <S extends z.ZodType>(schema: S) => ({ "application/json": { schema } });
const publicRoute = <R extends Parameters<typeof secured>[2]>(deps: GatewayDeps, route: R) =>
  secured({ public: true }, deps.authorize, route);
const atRoot = [{ url: "/", description: "the gateway root (outside /v2)" }];
const channelId = (kind: string) => kind.replace(".", "_");

// The bodies are serialised once; the schemas below describe them.
const jsonHeaders = { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-cache" };
const catalogues = new WeakMap<OpenAPIHono<GatewayEnv>, { eventTypes: string; asyncApi: string }>();

/** Made on first use, when every route is registered; the same bytes ever after. */
function catalogueOf(api: OpenAPIHono<GatewayEnv>): { eventTypes: string; asyncApi: string } {
  let catalogue = catalogues.get(api);
  if (!catalogue) {
    catalogue = makeCatalogue(openApiDocument(api));
    catalogues.set(api, catalogue);
  }
  return catalogue;
}

function eventTypes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    publicRoute(
      deps,
      createRoute({
        method: "get",
        path: "/webhooks/event-types",
        operationId: "listWebhookEventTypes",
        tags: ["Webhook events"],
        summary: "The event catalogue: every kind, when it is sent, its data schema and an example",
        description:
          "Every kind a registration may ask for, with when it is sent, the JSON Schema of the envelope's `data` and an " +
          "example delivery body. The same as the OpenAPI document's `webhooks` section and /v2/asyncapi.json.",
        responses: {
          ...commonResponses,
          200: { description: "every event kind", content: json(WebhookEventTypeList) },
        },
      }),
    ),
    (c) => c.body(catalogueOf(api).eventTypes, 200, jsonHeaders) as never,
  );
}

function asyncApi(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    publicRoute(
      deps,
      createRoute({
        method: "get",
        path: "/asyncapi.json",
        operationId: "asyncApiDocument",
        tags: ["Webhook events"],
        summary: "The AsyncAPI 3 document of the webhook events and their headers",
        description:
          "One channel per event kind (its address is the registration's URL), with the delivery headers and the envelope.",
        responses: {
          ...commonResponses,
          200: {
            description: "an AsyncAPI 3.1 document",
            content: json(z.object({ asyncapi: z.string() }).passthrough()),
          },
        },
      }),
    ),
    (c) => c.body(catalogueOf(api).asyncApi, 200, jsonHeaders) as never,
  );
}

const keysDescription =
  "The JWK set (OKP, Ed25519) of the system's webhook signing key: the v1a signatures in webhook-signature verify " +
  "with it alone. During a key rotation's overlap it holds both keys, the new one first.";

function signingKeys(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    publicRoute(
      deps,
      createRoute({
        method: "get",
        path: "/webhooks/keys",
        operationId: "webhookSigningKeys",
        tags: ["Webhook events"],
        summary: "The public keys of the v1a webhook signatures (a JWK set)",
        description: keysDescription,
        responses: {
          ...commonResponses,
          200: { description: "a JWK set", content: json(WebhookSigningKeySet) },
        },
      }),
    ),
    async (c) => c.json(await callService(deps, c, notificationRpc.signingKeys, {}), 200),
  );
}

/** The same key set at the gateway root, outside /v2 (a plain route, described in the document). */
function wellKnownKeys(app: Hono<GatewayEnv>, api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  const route = createRoute({
    method: "get",
    path: "/.well-known/webhook-keys.json",
    operationId: "wellKnownWebhookSigningKeys",
    tags: ["Webhook events"],
    summary: "The public keys of the v1a webhook signatures (a JWK set), at the gateway root",
    description: `${keysDescription} The same set as GET /v2/webhooks/keys.`,
    servers: atRoot,
    security: [],
    responses: {
      ...commonResponses,
      200: { description: "a JWK set", content: json(WebhookSigningKeySet) },
    },
  });
  api.openAPIRegistry.registerPath(route);
  app.get(route.path, async (c) => c.json(await callService(deps, c, notificationRpc.signingKeys, {})));
}

function rotateSigningKey(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    operatorRoute(
      deps,
      createRoute({
        method: "post",
        path: "/webhooks/keys/rotate",
        operationId: "rotateWebhookSigningKey",
        tags: ["Webhooks"],
        summary: "Rotate the system's webhook signing key without a gap",
        description:
          "A new Ed25519 key signs every v1a signature from now on and is published at once. During the overlap (24 h " +
          "unless overlapSeconds says otherwise, at most 7 days) the previous key also signs and stays published, so " +
          "receivers holding either key set verify every delivery.",
        request: { body: { required: false, content: json(RotateSigningKeyInput) } },
        responses: {
          ...operatorResponses,
          200: {
            description: "the new key and until when the previous one signs",
            content: json(SigningKeyRotated),
          },
          422: validationErrorResponse,
        },
      }),
      "only operator API keys may rotate the webhook signing key",
      emptyBodyIsNoBody,
    ),
    async (c) => {
      const { overlapSeconds } = c.req.valid("json");
      const rotated = await callService(deps, c, notificationRpc.rotateSigningKey, {
        ...(overlapSeconds !== undefined ? { overlapMs: overlapSeconds * 1000 } : {}),
      });
      return c.json(rotated, 200);
    },
  );
}

/**
 * Registers the catalogue's routes. Before the registration routes: `/webhooks/keys` and
 * `/webhooks/event-types` would otherwise be taken for `/webhooks/{id}`.
 */
export function webhookCatalogueRoutes(
  app: Hono<GatewayEnv>,
  api: OpenAPIHono<GatewayEnv>,
  deps: GatewayDeps,
): void {
  eventTypes(api, deps);
  asyncApi(api, deps);
  signingKeys(api, deps);
  wellKnownKeys(app, api, deps);
  rotateSigningKey(api, deps);
  registerWebhookEvents(api);
}

/** The OpenAPI 3.1 `webhooks` section: one entry per event kind, with its envelope and data. */
function registerWebhookEvents(api: OpenAPIHono<GatewayEnv>): void {
  for (const kind of webhookEventKinds) {
    api.openAPIRegistry.registerWebhook({
      method: "post",
      path: kind,
      operationId: `webhook_${channelId(kind)}`,
      tags: ["Webhook events"],
      // We call the receiver: no credential of the API's; the signature headers prove the sender.
      security: [],
      summary: `${kind}: sent when ${webhookEventData[kind].when}`,
      description: receiverDuties,
      request: {
        headers: webhookDeliveryHeaders,
        body: {
          required: true,
          content: json(webhookEnvelope(kind).openapi(`WebhookEvent_${channelId(kind)}`)),
        },
      },
      responses: { "2XX": { description: "received" } },
    });
  }
}

const receiverDuties =
  "Answer with a 2xx within WEBHOOK_TIMEOUT (10 s by default). Anything else, a time-out or a redirect is a " +
  "failure, retried after 1 min, 5 min, 30 min, 2 h and 12 h; after the 6th failure the delivery goes to the dead " +
  "letter queue (POST /webhooks/{id}/replay). A registration whose attempts all fail for 5 days is disabled and " +
  "the registrations asking for webhook.disabled are told. Deduplicate by `id`; order by `created_at`.";

/** `#/components/schemas/...` references replaced by what they name, for a schema that stands alone. */
function inlined(schema: Json, components: Record<string, Json>): Json {
  if (Array.isArray(schema)) return schema.map((each) => inlined(each, components));
  if (schema === null || typeof schema !== "object") return schema;
  if (typeof schema.$ref === "string") {
    const { $ref, ...rest } = schema;
    return { ...inlined(components[$ref.split("/").pop()!], components), ...inlined(rest, components) };
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inlined(value, components)]));
}

/**
 * The event catalogue and the AsyncAPI document, read off the OpenAPI document's `webhooks`
 * section: the same envelopes, data schemas, headers and examples, so the three cannot disagree.
 */
function makeCatalogue(document: Json): { eventTypes: string; asyncApi: string } {
  const components: Record<string, Json> = document.components?.schemas ?? {};
  const kinds = webhookEventKinds.map((kind) => {
    const post = document.webhooks[kind].post;
    const media = post.requestBody.content["application/json"];
    const envelope = inlined(media.schema, components);
    const headers: Json[] = (post.parameters ?? []).filter((parameter: Json) => parameter.in === "header");
    return { kind, when: webhookEventData[kind].when, envelope, example: media.example, headers };
  });
  const eventTypes = {
    items: kinds.map(({ kind, when, envelope, example }) => ({
      type: kind,
      description: `sent when ${when}`,
      dataSchema: { $schema: "https://json-schema.org/draft/2020-12/schema", ...envelope.properties.data },
      example,
    })),
  };
  const headerSchema = {
    type: "object",
    properties: Object.fromEntries(
      kinds[0]!.headers.map((header: Json) => [
        header.name,
        { ...inlined(header.schema, components), description: header.description },
      ]),
    ),
    required: kinds[0]!.headers.filter((header: Json) => header.required).map((header: Json) => header.name),
  };
  const asyncApi = {
    asyncapi: "3.1.0",
    info: {
      title: "Cheese Store webhooks",
      version: document.info.version,
      description:
        "The events the Cheese Store notification service POSTs to registered URLs (POST /v2/webhooks), one channel " +
        `per kind. ${receiverDuties}`,
      license: { name: "MIT" },
    },
    defaultContentType: "application/json",
    channels: Object.fromEntries(
      kinds.map(({ kind, when }) => [
        channelId(kind),
        {
          address: null,
          title: kind,
          description: `Sent when ${when}, to the URL of each registration that asked for ${kind}.`,
          messages: { [channelId(kind)]: { $ref: `#/components/messages/${channelId(kind)}` } },
        },
      ]),
    ),
    operations: Object.fromEntries(
      kinds.map(({ kind, when }) => [
        `send_${channelId(kind)}`,
        {
          action: "send",
          channel: { $ref: `#/channels/${channelId(kind)}` },
          summary: `${kind}: sent when ${when}`,
          messages: [{ $ref: `#/channels/${channelId(kind)}/messages/${channelId(kind)}` }],
        },
      ]),
    ),
    components: {
      schemas: { DeliveryHeaders: headerSchema },
      messages: Object.fromEntries(
        kinds.map(({ kind, when, envelope, example }) => [
          channelId(kind),
          {
            name: kind,
            title: kind,
            summary: `sent when ${when}`,
            contentType: "application/json",
            headers: { $ref: "#/components/schemas/DeliveryHeaders" },
            payload: envelope,
            examples: [{ name: channelId(kind), payload: example }],
          },
        ]),
      ),
    },
  };
  return { eventTypes: JSON.stringify(eventTypes), asyncApi: JSON.stringify(asyncApi) };
}
