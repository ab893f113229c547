import { type WebhookEventKind, webhookEventExample } from "@cheese/contracts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import { docsPageRoutes } from "./docs-page.ts";
import type { GatewayEnv } from "./env.ts";
import {
  errorExample,
  oauthErrorExample,
  operationExamples,
  validationErrorExample,
} from "./openapi-examples.ts";

/** Registers the security schemes of the spec's Authentication part. */
export function registerSecuritySchemes(api: OpenAPIHono<GatewayEnv>): void {
  const registry = api.openAPIRegistry;
  registry.registerComponent("securitySchemes", "api_key", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description:
      "An operator key (configured) or a customer's personal key (POST /customer/{username}/apiKeys).",
  });
  registry.registerComponent("securitySchemes", "bearer_auth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A session token from POST /customer/login, valid 24 hours.",
  });
  registry.registerComponent("securitySchemes", "operator_session", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "An operator's session token from POST /operator/sessions, valid 8 hours; only GET and DELETE /operator/session take it.",
  });
  const scopes = {
    "read:cheeses": "read cheese data",
    "write:cheeses": "create and update cheeses",
    "read:orders": "view order history",
    "write:orders": "place and manage orders",
  };
  registry.registerComponent("securitySchemes", "cheesy_oauth", {
    type: "oauth2",
    description: "Access tokens from the gateway's authorization server (/oauth/token, /oauth/authorize).",
    flows: {
      implicit: { authorizationUrl: "/oauth/authorize", scopes },
      authorizationCode: { authorizationUrl: "/oauth/authorize", tokenUrl: "/oauth/token", scopes },
      clientCredentials: { tokenUrl: "/oauth/token", scopes },
    },
  });
}

/**
 * Where the operations are. Server URLs are relative, so they resolve against the address the
 * document was fetched from: the API under `/v2`, and the authorization server's operations
 * (`/oauth/...`, `/.well-known/...`) each with its own server `/`. A client therefore needs one
 * base URL, the gateway's address, for every operation (docs/integrators.md).
 */
const documentConfig = {
  openapi: "3.1.0",
  info: {
    title: "Cheese Store",
    version: "2.0.0",
    description:
      "Catalogue, orders, inventory, customers, image upload, and signed webhook events. " +
      "Every operation but the authorization server's is under /v2; conventions shared by every " +
      "operation (errors, pagination, Idempotency-Key, rate limits) are described once in each " +
      "schema and header.",
    license: { name: "MIT", identifier: "MIT" },
  },
  servers: [{ url: "/v2", description: "the API, on the gateway's address" }],
  tags: [
    { name: "Cheeses", description: "The catalogue: cheeses, their images and their history." },
    { name: "Store", description: "Orders, their processing and history, and the inventory." },
    { name: "Customers", description: "Accounts: registration, sessions, profile, erasure and history." },
    { name: "API keys", description: "Customers' personal API keys: issued once, listed, revoked." },
    {
      name: "OAuth 2.0",
      description:
        "The authorization server on the gateway root (outside /v2), and the grants customers gave to clients.",
    },
    {
      name: "Webhooks",
      description: "Registrations of receiving URLs, their deliveries, pausing, secret rotation and replay.",
    },
    {
      name: "Dead letters",
      description:
        "Integration events a service kept failing to handle: listed, replayed to their consumer, or discarded by operators.",
    },
    {
      name: "Operator sessions",
      description:
        "An operator key opens a session whose token the operator console keeps; ended, it is refused by every gateway.",
    },
    {
      name: "Webhook events",
      description:
        "What the notification service POSTs to a registered URL, signed with X-Cheese-Signature and Standard Webhooks headers.",
    },
  ],
};

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked generically
type Json = any;

const errorSchemas = new Set(["Error", "ValidationError", "OAuthError"]);
const schemaName = (schema: Json): string | undefined =>
  typeof schema?.$ref === "string" ? schema.$ref.split("/").pop() : undefined;
const isBinary = (schema: Json) => schema?.type === "string" && schema?.format === "binary";

/** The example of one response body: the operation's own, else one made for an error body. */
function responseExample(operationId: string, status: string, description: string, media: Json): unknown {
  const own = operationExamples[operationId];
  if (own?.responses && status in own.responses) return own.responses[status];
  const name = schemaName(media.schema);
  if (name === "ValidationError") {
    return validationErrorExample(own?.invalidField ?? { field: "name", message: "Required" });
  }
  if (name === "OAuthError") return oauthErrorExample(Number(status), description);
  if (name && errorSchemas.has(name)) return errorExample(Number(status), description);
  return undefined;
}

function htmlExample(description: string): string {
  return `<!doctype html><html lang="en"><head><title>Cheese Store</title></head><body><p role="alert">${description}</p></body></html>`;
}

/** Puts the examples of `openapi-examples.ts` on every request and response body they belong to. */
function addExamples(document: Json): void {
  const operations = (paths: Json) =>
    Object.values(paths ?? {}).flatMap((item: Json) => Object.values(item) as Json[]);
  for (const operation of operations(document.paths)) {
    const id: string = operation.operationId;
    for (const media of Object.values(operation.requestBody?.content ?? {}) as Json[]) {
      const example = operationExamples[id]?.request;
      if (example !== undefined) media.example = example;
    }
    for (const [status, response] of Object.entries(operation.responses ?? {}) as [string, Json][]) {
      for (const [type, media] of Object.entries(response.content ?? {}) as [string, Json][]) {
        if (isBinary(media.schema)) continue;
        const own = operationExamples[id]?.responses?.[status];
        const example =
          type === "text/html"
            ? typeof own === "string"
              ? own
              : htmlExample(response.description)
            : responseExample(id, status, response.description, media);
        if (example !== undefined) media.example = example;
      }
    }
  }
  for (const [kind, item] of Object.entries(document.webhooks ?? {}) as [string, Json][]) {
    const example = webhookEventExample(kind as WebhookEventKind);
    for (const media of Object.values(item.post?.requestBody?.content ?? {}) as Json[]) {
      media.example = example;
    }
  }
}

/** The OpenAPI 3.1 document of every route registered on `api`, with its examples. */
export function openApiDocument(api: OpenAPIHono<GatewayEnv>): Json {
  const document = api.getOpenAPI31Document(documentConfig);
  addExamples(document);
  return document;
}

/** `/v2/openapi.json` serves the OpenAPI 3.1 document; `/docs` renders it. */
export function documentationRoutes(app: Hono<GatewayEnv>, api: OpenAPIHono<GatewayEnv>): void {
  // Built on first use, when every route is registered; the same bytes ever after.
  let document: string | undefined;
  api.get("/openapi.json", (c) => {
    document ??= JSON.stringify(openApiDocument(api));
    c.header("Content-Type", "application/json; charset=utf-8");
    c.header("Cache-Control", "no-cache");
    return c.body(document);
  });
  docsPageRoutes(app);
}
