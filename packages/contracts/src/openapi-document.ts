import type { scopes as allScopes } from "./config.ts";

/**
 * The parts of the gateway's OpenAPI document that are not routes: its info, servers and tags,
 * and the security schemes the routes' access rules name (the spec's Authentication part).
 */

const scopes: Record<(typeof allScopes)[number], string> = {
  "read:cheeses": "read cheese data",
  "write:cheeses": "create and update cheeses",
  "read:orders": "view order history",
  "write:orders": "place and manage orders",
};

/** The security schemes, by name. */
export const securitySchemes = {
  api_key: {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description:
      "An operator key (configured) or a customer's personal key (POST /customer/{username}/apiKeys).",
  },
  bearer_auth: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A session token from POST /customer/login, valid 24 hours.",
  },
  operator_session: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "An operator's session token from POST /operator/sessions, valid 8 hours; only GET and DELETE /operator/session take it.",
  },
  cheesy_oauth: {
    type: "oauth2",
    description: "Access tokens from the gateway's authorization server (/oauth/token, /oauth/authorize).",
    flows: {
      implicit: { authorizationUrl: "/oauth/authorize", scopes },
      authorizationCode: { authorizationUrl: "/oauth/authorize", tokenUrl: "/oauth/token", scopes },
      clientCredentials: { tokenUrl: "/oauth/token", scopes },
    },
  },
} as const;

/**
 * Where the operations are. Server URLs are relative, so they resolve against the address the
 * document was fetched from: the API under `/v2`, and the authorization server's operations
 * (`/oauth/...`, `/.well-known/...`) each with its own server `/`. A client therefore needs one
 * base URL, the gateway's address, for every operation (docs/integrators.md).
 */
export const openApiDocumentConfig = {
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
