import * as contracts from "@cheese/contracts";
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Handler, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { callService } from "../rpc.ts";
import { commonResponses, jsonResponse } from "./responses.ts";
import { atRoot, type Operation } from "./route.ts";

const html = { "text/html": { schema: z.string() } };
/** Problems shown to the user: a page for browsers, the error body for other clients. */
const problem = { ...html, "application/json": { schema: contracts.OAuthErrorBody } };
const location = {
  description: "the client's redirect URI with the result",
  schema: { type: "string" as const },
};
const redirect = (description: string) => ({ description, headers: { Location: location } });
const oauthError = (description: string) => jsonResponse(description, contracts.OAuthErrorBody);

/**
 * An endpoint of the authorization server: on the gateway root, public, and counted against the
 * caller's rate limit like every route of the gateway.
 */
const endpoint = (operation: Omit<Operation, "tags" | "servers" | "security">) => ({
  ...operation,
  tags: ["OAuth 2.0"],
  responses: { ...operation.responses, 429: commonResponses[429] },
});

const authorizePageRoute = endpoint({
  method: "get",
  path: "/oauth/authorize",
  operationId: "oauthAuthorize",
  request: { query: contracts.AuthorizationQuery },
  responses: {
    200: { description: "the HTML sign-in and consent page", content: html },
    302: redirect("a problem with the request, reported to the client (error, error_description, state)"),
    400: { description: "unknown client or unregistered redirect URI", content: problem },
  },
});

const signInRoute = endpoint({
  method: "post",
  path: "/oauth/authorize",
  operationId: "oauthSignIn",
  request: {
    body: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: contracts.SignInForm } },
    },
  },
  responses: {
    303: redirect(
      "to the redirect URI: ?code=&state= (code), #access_token=&... (token), or ?error=access_denied",
    ),
    400: { description: "unknown client or unregistered redirect URI", content: problem },
    401: { description: "wrong username or password: the page again, with the problem", content: problem },
  },
});

const tokenRoute = endpoint({
  method: "post",
  path: "/oauth/token",
  operationId: "oauthToken",
  request: {
    body: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: contracts.TokenRequest } },
    },
  },
  responses: {
    200: jsonResponse("the tokens", contracts.TokenResponse),
    400: oauthError("invalid_request, invalid_grant, invalid_scope, unsupported_grant_type"),
    401: oauthError("invalid_client"),
  },
});

const revokeRoute = endpoint({
  method: "post",
  path: "/oauth/revoke",
  operationId: "oauthRevoke",
  request: {
    body: {
      required: true,
      content: { "application/x-www-form-urlencoded": { schema: contracts.RevocationRequest } },
    },
  },
  responses: {
    200: { description: "revoked, or nothing to revoke" },
    400: oauthError("invalid_request"),
    401: oauthError("invalid_client"),
  },
});

const jwksRoute = endpoint({
  method: "get",
  path: "/.well-known/jwks.json",
  operationId: "jwks",
  responses: {
    200: jsonResponse("a JWK set", contracts.JwkSet),
  },
});

const metadataRoute = endpoint({
  method: "get",
  path: "/.well-known/oauth-authorization-server",
  operationId: "authorizationServerMetadata",
  responses: {
    200: jsonResponse("the metadata", contracts.AuthorizationServerMetadata),
  },
});

/**
 * The authorization server's pages and endpoints on the gateway root: `/oauth/authorize`
 * (sign-in and consent page), `/oauth/token`, `/oauth/revoke`, `/.well-known/jwks.json` and
 * `/.well-known/oauth-authorization-server`. The customer service serves them
 * (`customer.identity.http`, docs/identity.md); the gateway documents them from the definitions
 * above, applies its rate limits, and forwards each request as it came (method, path and query,
 * the headers the server reads, the form: they speak form-encoding and HTML and answer RFC 6749
 * errors, so nothing here validates them) and its answer as it comes back.
 */
export function oauthRoutes(app: Hono<GatewayEnv>, api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  const forward: Handler<GatewayEnv> = async (c) => {
    const url = new URL(c.req.url);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = c.req.header(name);
      if (value !== undefined) headers[name] = value;
    }
    const answer = await callService(deps, c, contracts.identityRpc.http, {
      method: c.req.method,
      target: `${url.pathname}${url.search}`,
      headers,
      body: c.req.method === "POST" ? await c.req.text() : "",
      publicUrl: deps.publicUrl,
      issuer: deps.auth.issuer,
    });
    return c.body(answer.body, answer.status as ContentfulStatusCode, answer.headers);
  };
  for (const operation of [
    jwksRoute,
    metadataRoute,
    authorizePageRoute,
    signInRoute,
    tokenRoute,
    revokeRoute,
  ]) {
    atRoot(app, api, operation, forward);
  }
}

/** What the authorization server reads of a request: the form's type, HTML or not, HTTP Basic. */
const FORWARDED_HEADERS = ["content-type", "accept", "authorization"];
