import { z } from "@hono/zod-openapi";
import { scopes } from "./config.ts";
import { ErrorBody } from "./errors.ts";

/**
 * What the authorization server's endpoints take and answer (RFC 6749, 7009, 8414), as the
 * gateway documents them; the customer service serves them (docs/identity.md).
 */

export const OAuthErrorBody = ErrorBody.extend({
  error: z.string().openapi({ description: "RFC 6749 error code, e.g. invalid_grant" }),
  error_description: z.string(),
}).openapi("OAuthError");

export const TokenResponse = z
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

export const TokenRequest = z
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

export const AuthorizationQuery = z.object({
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

export const SignInForm = AuthorizationQuery.extend({
  username: z.string(),
  password: z.string().openapi({ format: "password" }),
  decision: z.enum(["allow", "deny"]),
});

export const RevocationRequest = z
  .object({
    token: z.string().openapi({ description: "an access token or a refresh token this client holds" }),
    token_type_hint: z.enum(["access_token", "refresh_token"]).optional(),
    client_id: z.string().optional().openapi({ description: "public clients, or client_secret_post" }),
    client_secret: z.string().optional().openapi({ description: "client_secret_post (or use HTTP Basic)" }),
  })
  .openapi("RevocationRequest");

export const JwkSet = z.object({
  keys: z.array(z.object({ kty: z.string(), kid: z.string(), alg: z.string() }).passthrough()),
});

export const AuthorizationServerMetadata = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    jwks_uri: z.string(),
    scopes_supported: z.array(z.enum(scopes)),
  })
  .passthrough();
