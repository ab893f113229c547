import { swaggerUI } from "@hono/swagger-ui";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import type { GatewayEnv } from "./env.ts";

/** Registers the security schemes: api_key, bearer_auth, cheesy_oauth (docs/identity.md). */
export function registerSecuritySchemes(api: OpenAPIHono<GatewayEnv>): void {
  const registry = api.openAPIRegistry;
  registry.registerComponent("securitySchemes", "api_key", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
  });
  registry.registerComponent("securitySchemes", "bearer_auth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
  });
  const scopes = {
    "read:cheeses": "read cheese data",
    "write:cheeses": "create and update cheeses",
    "read:orders": "view order history",
    "write:orders": "place and manage orders",
  };
  registry.registerComponent("securitySchemes", "cheesy_oauth", {
    type: "oauth2",
    flows: {
      implicit: { authorizationUrl: "/oauth/authorize", scopes },
      authorizationCode: { authorizationUrl: "/oauth/authorize", tokenUrl: "/oauth/token", scopes },
      clientCredentials: { tokenUrl: "/oauth/token", scopes },
    },
  });
}

/** `/v2/openapi.json` serves the OpenAPI 3.1 document; `/docs` renders it. */
export function documentationRoutes(app: Hono<GatewayEnv>, api: OpenAPIHono<GatewayEnv>): void {
  api.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Cheese Store",
      version: "2.0.0",
      description: "Catalogue, orders, inventory, customers, image upload, and signed webhook events.",
    },
    servers: [{ url: "/v2", description: "this gateway" }],
  });
  app.get("/docs", swaggerUI({ url: "/v2/openapi.json", title: "Cheese Store API" }));
}
