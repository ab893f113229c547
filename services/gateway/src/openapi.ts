import { openApiDocumentConfig, securitySchemes, withExamples } from "@cheese/contracts";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Hono } from "hono";
import { docsPageRoutes } from "./docs-page.ts";
import type { GatewayEnv } from "./env.ts";

/** Registers the security schemes of the spec's Authentication part. */
export function registerSecuritySchemes(api: OpenAPIHono<GatewayEnv>): void {
  for (const [name, scheme] of Object.entries(securitySchemes)) {
    api.openAPIRegistry.registerComponent("securitySchemes", name, scheme);
  }
}

/** The OpenAPI 3.1 document of every route registered on `api`, with its examples. */
// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked generically
export function openApiDocument(api: OpenAPIHono<GatewayEnv>): any {
  return withExamples(api.getOpenAPI31Document(openApiDocumentConfig));
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
