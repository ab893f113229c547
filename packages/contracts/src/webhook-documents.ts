import type { RouteConfig } from "@hono/zod-openapi";
import { webhookEventKinds } from "./webhook.ts";
import { webhookDeliveryHeaders, webhookEnvelope, webhookEventData } from "./webhook-events.ts";

/**
 * The documents a receiver reads of the webhook events, all made from `webhookEventData`: the
 * OpenAPI 3.1 `webhooks` section (`webhookOperations`, registered by the gateway with its
 * routes), and, read off the OpenAPI document the gateway serves, the event catalogue
 * (`GET /v2/webhooks/event-types`) and the AsyncAPI document (`GET /v2/asyncapi.json`): the same
 * envelopes, data schemas, headers and examples, so the three cannot disagree.
 */

// biome-ignore lint/suspicious/noExplicitAny: generated JSON Schemas are walked generically
type Json = any;

const channelId = (kind: string) => kind.replace(".", "_");

/** What a receiver must do, said in both documents. */
const receiverDuties =
  "Answer with a 2xx within WEBHOOK_TIMEOUT (10 s by default). Anything else, a time-out or a redirect is a " +
  "failure, retried after 1 min, 5 min, 30 min, 2 h and 12 h; after the 6th failure the delivery goes to the dead " +
  "letter queue (POST /webhooks/{id}/replay). A registration whose attempts all fail for 5 days is disabled and " +
  "the registrations asking for webhook.disabled are told. Deduplicate by `id`; order by `created_at`.";

/** The OpenAPI 3.1 `webhooks` section: one operation per event kind, with its envelope and data. */
export const webhookOperations: RouteConfig[] = webhookEventKinds.map((kind) => ({
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
      content: {
        "application/json": { schema: webhookEnvelope(kind).openapi(`WebhookEvent_${channelId(kind)}`) },
      },
    },
  },
  responses: { "2XX": { description: "received" } },
}));

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
export function webhookCatalogues(document: Json): { eventTypes: string; asyncApi: string } {
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
