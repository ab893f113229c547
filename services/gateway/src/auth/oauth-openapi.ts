import { ErrorBody } from "@cheese/contracts";
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { GatewayEnv } from "../env.ts";
import { allScopes } from "./credentials.ts";

/**
 * The authorization server's endpoints live on the gateway root, not under /v2, and speak
 * form-encoding and HTML, so they are served by plain Hono routes (routes/oauth.ts) and described
 * here, each with the root as its server.
 */
const atRoot = [{ url: "/", description: "the gateway root (outside /v2)" }];
const publicAccess: { [name: string]: string[] }[] = [];

const OAuthErrorBody = ErrorBody.extend({
  error: z.string().openapi({ description: "RFC 6749 error code, e.g. invalid_grant" }),
  error_description: z.string(),
}).openapi("OAuthError");

const TokenResponse = z
  .object({
    access_token: z.string().openapi({ description: "JWT (EdDSA)" }),
    token_type: z.literal("Bearer"),
    expires_in: z.number().int().openapi({ description: "seconds" }),
    scope: z.string().openapi({ description: "granted scopes, space separated" }),
    refresh_token: z
      .string()
      .optional()
      .openapi({ description: "authorization_code and refresh_token grants; single use, rotated" }),
  })
  .openapi("TokenResponse");

const TokenRequest = z
  .object({
    grant_type: z.enum(["authorization_code", "client_credentials", "refresh_token"]),
    code: z.string().optional().openapi({ description: "authorization_code" }),
    redirect_uri: z
      .string()
      .optional()
      .openapi({ description: "authorization_code: as in the authorization request" }),
    code_verifier: z.string().optional().openapi({ description: "authorization_code: the PKCE verifier" }),
    refresh_token: z.string().optional().openapi({ description: "refresh_token" }),
    scope: z.string().optional().openapi({ description: "space separated; narrows what is granted" }),
    client_id: z.string().optional().openapi({ description: "public clients, or client_secret_post" }),
    client_secret: z.string().optional().openapi({ description: "client_secret_post (or use HTTP Basic)" }),
  })
  .openapi("TokenRequest");

const AuthorizationQuery = z.object({
  response_type: z
    .enum(["code", "token"])
    .openapi({ description: "code (with PKCE S256) or token (implicit)" }),
  client_id: z.string(),
  redirect_uri: z.string().optional().openapi({ description: "must equal a registered URI exactly" }),
  scope: z.string().optional().openapi({
    description: "space separated; a customer grants at most read:cheeses read:orders write:orders",
  }),
  state: z.string().optional(),
  code_challenge: z.string().optional().openapi({ description: "required for response_type=code" }),
  code_challenge_method: z.literal("S256").optional(),
});

const SignInForm = AuthorizationQuery.extend({
  username: z.string(),
  password: z.string().openapi({ format: "password" }),
  decision: z.enum(["allow", "deny"]),
});

const html = { "text/html": { schema: z.string() } };
/** Problems shown to the user: a page for browsers, the error body for other clients. */
const problem = { ...html, "application/json": { schema: OAuthErrorBody } };
const redirect = (description: string) => ({
  description,
  headers: {
    Location: {
      description: "the client's redirect URI with the result",
      schema: { type: "string" as const },
    },
  },
});

export function documentOAuth(api: OpenAPIHono<GatewayEnv>): void {
  const registry = api.openAPIRegistry;
  registry.registerPath({
    method: "get",
    path: "/oauth/authorize",
    operationId: "oauthAuthorize",
    tags: ["OAuth 2.0"],
    summary: "Sign-in and consent page (authorization code with PKCE, or implicit)",
    servers: atRoot,
    security: publicAccess,
    request: { query: AuthorizationQuery },
    responses: {
      200: { description: "the HTML sign-in and consent page", content: html },
      302: redirect("a problem with the request, reported to the client (error, error_description, state)"),
      400: { description: "unknown client or unregistered redirect URI", content: problem },
      429: { description: "rate limit exceeded", content: { "application/json": { schema: ErrorBody } } },
    },
  });
  registry.registerPath({
    method: "post",
    path: "/oauth/authorize",
    operationId: "oauthSignIn",
    tags: ["OAuth 2.0"],
    summary: "Submit the sign-in and consent form",
    servers: atRoot,
    security: publicAccess,
    request: {
      body: { required: true, content: { "application/x-www-form-urlencoded": { schema: SignInForm } } },
    },
    responses: {
      303: redirect(
        "to the redirect URI: ?code=&state= (code), #access_token=&... (token), or ?error=access_denied",
      ),
      400: { description: "unknown client or unregistered redirect URI", content: problem },
      401: { description: "wrong username or password: the page again, with the problem", content: problem },
    },
  });
  registry.registerPath({
    method: "post",
    path: "/oauth/token",
    operationId: "oauthToken",
    tags: ["OAuth 2.0"],
    summary: "Tokens: authorization_code (with code_verifier), client_credentials, refresh_token",
    description:
      "Confidential clients authenticate with HTTP Basic or client_secret_post; public clients send client_id and rely on PKCE. client_credentials is for confidential clients only.",
    servers: atRoot,
    security: publicAccess,
    request: {
      body: { required: true, content: { "application/x-www-form-urlencoded": { schema: TokenRequest } } },
    },
    responses: {
      200: { description: "the tokens", content: { "application/json": { schema: TokenResponse } } },
      400: {
        description: "invalid_request, invalid_grant, invalid_scope, unsupported_grant_type",
        content: { "application/json": { schema: OAuthErrorBody } },
      },
      401: { description: "invalid_client", content: { "application/json": { schema: OAuthErrorBody } } },
    },
  });
  registry.registerPath({
    method: "get",
    path: "/.well-known/jwks.json",
    operationId: "jwks",
    tags: ["OAuth 2.0"],
    summary: "The public keys tokens are signed with",
    servers: atRoot,
    security: publicAccess,
    responses: {
      200: {
        description: "a JWK set",
        content: {
          "application/json": {
            schema: z.object({
              keys: z.array(z.object({ kty: z.string(), kid: z.string(), alg: z.string() }).passthrough()),
            }),
          },
        },
      },
    },
  });
  registry.registerPath({
    method: "get",
    path: "/.well-known/oauth-authorization-server",
    operationId: "authorizationServerMetadata",
    tags: ["OAuth 2.0"],
    summary: "RFC 8414 metadata",
    servers: atRoot,
    security: publicAccess,
    responses: {
      200: {
        description: "the metadata",
        content: {
          "application/json": {
            schema: z
              .object({
                issuer: z.string(),
                authorization_endpoint: z.string(),
                token_endpoint: z.string(),
                jwks_uri: z.string(),
                scopes_supported: z.array(z.enum(allScopes as [string, ...string[]])),
              })
              .passthrough(),
          },
        },
      },
    },
  });
}
