import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Context, Hono } from "hono";
import type { GatewayEnv } from "./env.ts";

/**
 * `/docs`: the API reference, rendered by Swagger UI from files this gateway serves itself
 * (`swagger-ui-dist`, pinned to one version in package.json), so it works without internet and
 * nothing on the page comes from another origin. The page and its scripts load under a CSP that
 * allows this origin only, and no framing (the OAuth sign-in form lives on the same origin).
 */

const require = createRequire(import.meta.url);
const distDir = dirname(require.resolve("swagger-ui-dist/package.json"));
const swaggerUiVersion = (require("swagger-ui-dist/package.json") as { version: string }).version;

/** Asset paths carry the version, so they can be cached for good. */
const assetBase = `/docs/assets/${swaggerUiVersion}`;

/**
 * Starts Swagger UI on the served document. No validator badge (it would call
 * validator.swagger.io); the OAuth 2.0 redirect page is served below, under /docs.
 */
const initializer = `window.ui = SwaggerUIBundle({
  url: "/v2/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
  oauth2RedirectUrl: window.location.origin + "/docs/oauth2-redirect.html",
});
`;

interface Asset {
  body: Uint8Array;
  type: string;
  /** Subresource Integrity value of the file, for the page's tags. */
  integrity: string;
}

const javascript = "text/javascript; charset=utf-8";
/** Everything the page loads, with its type: read from the package (or made) once, on first use. */
const assetTypes = new Map([
  ["swagger-ui-bundle.js", javascript],
  ["swagger-ui.css", "text/css; charset=utf-8"],
  ["favicon-32x32.png", "image/png"],
  ["oauth2-redirect.js", javascript],
  ["init.js", javascript],
]);
const loaded = new Map<string, Asset>();

function load(name: string): Asset | undefined {
  const type = assetTypes.get(name);
  if (!type) return undefined;
  let found = loaded.get(name);
  if (!found) {
    const body = name === "init.js" ? Buffer.from(initializer, "utf8") : readFileSync(join(distDir, name));
    found = { body, type, integrity: `sha384-${createHash("sha384").update(body).digest("base64")}` };
    loaded.set(name, found);
  }
  return found;
}

/** Only this origin, for everything; Swagger UI sets element styles and draws icons as data: URIs. */
export const docsContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const pageHeaders = {
  "Content-Security-Policy": docsContentSecurityPolicy,
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
};

function docsPage(): string {
  const script = (name: string) =>
    `<script src="${assetBase}/${name}" integrity="${load(name)!.integrity}"></script>`;
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Cheese Store API reference</title>
  <link rel="stylesheet" href="${assetBase}/swagger-ui.css" integrity="${load("swagger-ui.css")!.integrity}">
  <link rel="icon" type="image/png" href="${assetBase}/favicon-32x32.png">
</head>
<body>
  <noscript>The API reference needs JavaScript; the document itself is at <a href="/v2/openapi.json">/v2/openapi.json</a>.</noscript>
  <div id="swagger-ui"></div>
  ${script("swagger-ui-bundle.js")}
  ${script("init.js")}
</body>
</html>
`;
}

const redirectPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Signing in</title></head>
<body><script src="${assetBase}/oauth2-redirect.js"></script></body></html>
`;

function html(c: Context<GatewayEnv>, body: string): Response {
  for (const [name, value] of Object.entries(pageHeaders)) c.header(name, value);
  c.header("Cache-Control", "no-cache");
  return c.html(body);
}

/**
 * `/docs`, its assets, the OAuth 2.0 redirect page Swagger UI's "Authorize" comes back to, and
 * `/favicon.ico` (what a browser asks for on any page without an icon, the console's included).
 */
export function docsPageRoutes(app: Hono<GatewayEnv>): void {
  let page: string | undefined;
  app.get("/docs", (c) => {
    page ??= docsPage();
    return html(c, page);
  });
  app.get("/docs/oauth2-redirect.html", (c) => html(c, redirectPage));
  app.get("/favicon.ico", (c) => {
    c.header("Content-Type", "image/png");
    c.header("Cache-Control", "public, max-age=86400");
    return c.body(load("favicon-32x32.png")!.body as Uint8Array<ArrayBuffer>);
  });
  app.get(`${assetBase}/:file`, (c) => {
    const found = load(c.req.param("file"));
    if (!found) return c.notFound();
    c.header("Content-Type", found.type);
    c.header("Cache-Control", "public, max-age=31536000, immutable");
    c.header("Content-Security-Policy", docsContentSecurityPolicy);
    return c.body(found.body as Uint8Array<ArrayBuffer>);
  });
}
