import { timingSafeEqual } from "node:crypto";
import { customerRpc, ErrorBody } from "@cheese/contracts";
import { RemoteError } from "@cheese/messaging";
import { createRoute, type OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context, Handler, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  type AuthorizationRequest,
  parseAuthorizationRequest,
  redirectWith,
  repeatedParameter,
  verifierMatches,
} from "../auth/authorization-request.ts";
import { errorPage, pageSecurityHeaders, signInPage } from "../auth/authorize-page.ts";
import { allScopes, type OAuthClient } from "../auth/credentials.ts";
import { type Grant, type OAuthGrants, REFRESH_TOKEN_TTL_MS } from "../auth/oauth-grants.ts";
import type { Revocations } from "../auth/revocations.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv, Scope } from "../env.ts";
import { callService } from "../rpc.ts";

/** Lifetime of a client-credentials access token. */
const CLIENT_TOKEN_TTL_SECONDS = 3600;
/** Lifetime of an access token a customer granted to a client (refresh it after). */
export const USER_TOKEN_TTL_SECONDS = 3600;

export interface OAuthDeps {
  grants: OAuthGrants;
  revocations: Revocations;
}

/**
 * The routes of the authorization server. They are documented from these definitions like every
 * other route (in /v2/openapi.json, each with the gateway root as its server), but they speak
 * form-encoding and HTML and answer RFC 6749 errors, so their handlers read their own parameters
 * instead of going through the API's validation.
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
/** Every route of the gateway counts against the caller's rate limit. */
const rateLimited = {
  429: {
    description: "rate limit exceeded; see Retry-After",
    content: { "application/json": { schema: ErrorBody } },
  },
};
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

const authorizePageRoute = createRoute({
  method: "get",
  path: "/oauth/authorize",
  operationId: "oauthAuthorize",
  tags: ["OAuth 2.0"],
  summary: "Sign-in and consent page (authorization code with PKCE, or implicit)",
  description:
    "The page a client sends the customer's browser to: it names the client and the scopes asked for, and takes the customer's username and password. Served with a Content-Security-Policy that forbids framing and scripts.",
  servers: atRoot,
  security: publicAccess,
  request: { query: AuthorizationQuery },
  responses: {
    200: { description: "the HTML sign-in and consent page", content: html },
    302: redirect("a problem with the request, reported to the client (error, error_description, state)"),
    400: { description: "unknown client or unregistered redirect URI", content: problem },
    ...rateLimited,
  },
});

const signInRoute = createRoute({
  method: "post",
  path: "/oauth/authorize",
  operationId: "oauthSignIn",
  tags: ["OAuth 2.0"],
  summary: "Submit the sign-in and consent form",
  description:
    "The page's form, submitted by the browser. Allow: redirects to the client with a code (response_type=code) or the token in the fragment (token, public clients only). Deny: redirects with error=access_denied. A wrong password shows the page again.",
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
    ...rateLimited,
  },
});

const tokenRoute = createRoute({
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
    ...rateLimited,
  },
});

const RevocationRequest = z
  .object({
    token: z.string().openapi({ description: "an access token or a refresh token this client holds" }),
    token_type_hint: z.enum(["access_token", "refresh_token"]).optional(),
    client_id: z.string().optional().openapi({ description: "public clients, or client_secret_post" }),
    client_secret: z.string().optional().openapi({ description: "client_secret_post (or use HTTP Basic)" }),
  })
  .openapi("RevocationRequest");

const revokeRoute = createRoute({
  method: "post",
  path: "/oauth/revoke",
  operationId: "oauthRevoke",
  tags: ["OAuth 2.0"],
  summary: "RFC 7009 token revocation",
  description:
    "A refresh token ends its whole grant (every access and refresh token of it); an access token ends itself. Clients authenticate as at the token endpoint. The answer is 200 whether or not the token was valid, so it reveals nothing; a token of another client is left alone.",
  servers: atRoot,
  security: publicAccess,
  request: {
    body: { required: true, content: { "application/x-www-form-urlencoded": { schema: RevocationRequest } } },
  },
  responses: {
    200: { description: "revoked, or nothing to revoke" },
    400: { description: "invalid_request", content: { "application/json": { schema: OAuthErrorBody } } },
    401: { description: "invalid_client", content: { "application/json": { schema: OAuthErrorBody } } },
    ...rateLimited,
  },
});

const jwksRoute = createRoute({
  method: "get",
  path: "/.well-known/jwks.json",
  operationId: "jwks",
  tags: ["OAuth 2.0"],
  summary: "The public keys tokens are signed with",
  description:
    "The Ed25519 public keys (JWK set) every access and session token is signed with, for verifying tokens without calling the gateway.",
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
    ...rateLimited,
  },
});

const metadataRoute = createRoute({
  method: "get",
  path: "/.well-known/oauth-authorization-server",
  operationId: "authorizationServerMetadata",
  tags: ["OAuth 2.0"],
  summary: "RFC 8414 metadata",
  description:
    "RFC 8414 authorization server metadata: the endpoints, grant types, scopes and client authentication methods supported.",
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
    ...rateLimited,
  },
});

/**
 * The authorization server on the gateway root: `/oauth/authorize` (sign-in and consent page),
 * `/oauth/token`, `/.well-known/jwks.json` and `/.well-known/oauth-authorization-server`. Error
 * bodies carry both our `{code, type, message}` and RFC 6749's `error` / `error_description`, so
 * standard OAuth clients understand them. docs/identity.md describes the flows.
 */
export function oauthRoutes(
  app: Hono<GatewayEnv>,
  api: OpenAPIHono<GatewayEnv>,
  deps: GatewayDeps,
  oauth: OAuthDeps,
): void {
  const { tokens, oauthClients, issuer } = deps.auth;
  const route = (definition: RouteConfig, handler: Handler<GatewayEnv>) => {
    api.openAPIRegistry.registerPath(definition);
    app.on(definition.method.toUpperCase(), definition.path, handler);
  };

  route(jwksRoute, (c) => {
    c.header("Cache-Control", "public, max-age=300");
    return c.json(tokens.jwks());
  });

  route(metadataRoute, (c) =>
    c.json({
      issuer,
      authorization_endpoint: `${deps.publicUrl}/oauth/authorize`,
      token_endpoint: `${deps.publicUrl}/oauth/token`,
      revocation_endpoint: `${deps.publicUrl}/oauth/revoke`,
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      jwks_uri: `${deps.publicUrl}/.well-known/jwks.json`,
      scopes_supported: allScopes,
      response_types_supported: ["code", "token"],
      response_modes_supported: ["query", "fragment"],
      grant_types_supported: ["authorization_code", "client_credentials", "refresh_token", "implicit"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    }),
  );

  route(authorizePageRoute, (c) => {
    const parsed = parseAuthorizationRequest(new URL(c.req.url).searchParams, oauthClients);
    if (!parsed.ok) return refuseAuthorization(c, parsed);
    return page(c, signInPage(parsed.request), 200, parsed.request.redirectUri);
  });

  route(signInRoute, async (c) => {
    const form = await readForm(c);
    if (!form) return problemPage(c, 400, "invalid_request", "Send the sign-in form form-encoded.");
    const parsed = parseAuthorizationRequest(form, oauthClients);
    if (!parsed.ok) return refuseAuthorization(c, parsed);
    const { request } = parsed;
    if (form.get("decision") === "deny") {
      return redirectError(c, request, "access_denied", "the customer denied the request");
    }
    let customer: { customerId: number; username: string; passwordVersion: number };
    try {
      customer = await callService(deps, c, customerRpc.login, {
        username: form.get("username") ?? "",
        password: form.get("password") ?? "",
      });
    } catch (error) {
      if (error instanceof RemoteError && error.body.status === 401) {
        if (!wantsHtml(c)) return oauthError(c, 401, "access_denied", "invalid username or password");
        return page(c, signInPage(request, "Invalid username or password."), 401, request.redirectUri);
      }
      throw error;
    }
    if (request.responseType === "code") {
      const code = await oauth.grants.issueCode({
        clientId: request.client.id,
        redirectUri: request.redirectUri,
        redirectUriGiven: request.redirectUriGiven,
        customerId: customer.customerId,
        username: customer.username,
        scopes: request.scopes,
        codeChallenge: request.codeChallenge!,
        passwordVersion: customer.passwordVersion,
      });
      // 303: the browser follows with a GET, as it must after a POST.
      return c.redirect(redirectWith(request.redirectUri, false, { code, state: request.state }), 303);
    }
    // Implicit (public clients only): a grant of one token, which the customer can see and revoke.
    const grant = await oauth.grants.startGrant(
      {
        clientId: request.client.id,
        customerId: customer.customerId,
        scopes: request.scopes,
        passwordVersion: customer.passwordVersion,
      },
      USER_TOKEN_TTL_SECONDS * 1000,
    );
    const issued = await accessToken(deps, grant, customer.username, request.scopes);
    return c.redirect(
      redirectWith(request.redirectUri, true, {
        access_token: issued.token,
        token_type: "Bearer",
        expires_in: String(USER_TOKEN_TTL_SECONDS),
        scope: request.scopes.join(" "),
        state: request.state,
      }),
      303,
    );
  });

  route(tokenRoute, async (c) => {
    c.header("Cache-Control", "no-store");
    c.header("Pragma", "no-cache");
    const form = await readForm(c);
    if (!form) return oauthError(c, 400, "invalid_request", "send the parameters form-encoded");
    const repeated = repeatedParameter(form);
    if (repeated) return oauthError(c, 400, "invalid_request", `${repeated} is given more than once`);
    const grantType = form.get("grant_type");
    if (!grantType) return oauthError(c, 400, "invalid_request", "grant_type is required");
    if (!["client_credentials", "authorization_code", "refresh_token"].includes(grantType)) {
      return oauthError(c, 400, "unsupported_grant_type", `grant_type ${grantType} is not supported`);
    }
    const client = authenticateClient(c, form, oauthClients, grantType === "client_credentials");
    if (!client) {
      c.header("WWW-Authenticate", 'Basic realm="cheese-store"');
      return oauthError(c, 401, "invalid_client", "unknown client or wrong secret");
    }
    if (grantType === "client_credentials") return clientCredentialsGrant(c, form, client, deps);
    if (grantType === "authorization_code") return authorizationCodeGrant(c, form, client, deps, oauth);
    return refreshTokenGrant(c, form, client, deps, oauth);
  });

  route(revokeRoute, async (c) => {
    c.header("Cache-Control", "no-store");
    const form = await readForm(c);
    if (!form) return oauthError(c, 400, "invalid_request", "send the parameters form-encoded");
    const repeated = repeatedParameter(form);
    if (repeated) return oauthError(c, 400, "invalid_request", `${repeated} is given more than once`);
    const client = authenticateClient(c, form, oauthClients, false);
    if (!client) {
      c.header("WWW-Authenticate", 'Basic realm="cheese-store"');
      return oauthError(c, 401, "invalid_client", "unknown client or wrong secret");
    }
    const token = form.get("token");
    if (!token) return oauthError(c, 400, "invalid_request", "token is required");
    await revokeToken(deps, oauth, client, token);
    return c.body(null, 200);
  });
}

/**
 * RFC 7009: whatever the hint says, the token is tried as what it looks like. An access token
 * (a JWT of ours, issued to this client) is revoked until it expires; a refresh token ends its
 * grant. Anything else (unknown, expired, another client's) is left alone, silently.
 */
async function revokeToken(deps: GatewayDeps, oauth: OAuthDeps, client: OAuthClient, token: string) {
  if (token.split(".").length === 3) {
    const claims = await deps.auth.tokens.verify(token).catch(() => undefined);
    const holder = claims?.kind === "client" ? claims.sub : claims?.clientId;
    if (claims && claims.kind !== "session" && holder === client.id) {
      await oauth.revocations.revokeToken(claims.jti, claims.exp * 1000);
    }
    return;
  }
  await oauth.grants.revokeByRefreshToken(token, client.id);
}

async function clientCredentialsGrant(
  c: Context<GatewayEnv>,
  form: URLSearchParams,
  client: OAuthClient,
  deps: GatewayDeps,
): Promise<Response> {
  const requested = form.get("scope");
  const granted = requested
    ? requested.split(" ").filter((s): s is Scope => client.scopes.includes(s as Scope))
    : client.scopes;
  if (requested && granted.length === 0)
    return oauthError(c, 400, "invalid_scope", "none of the scopes is allowed");
  const issued = await deps.auth.tokens.issue(
    { kind: "client", sub: client.id, scopes: granted },
    CLIENT_TOKEN_TTL_SECONDS,
  );
  return c.json({
    access_token: issued.token,
    token_type: "Bearer",
    expires_in: CLIENT_TOKEN_TTL_SECONDS,
    scope: granted.join(" "),
  });
}

/** RFC 6749 §4.1.3 with RFC 7636: the code once, for the client it was issued to, with the verifier. */
async function authorizationCodeGrant(
  c: Context<GatewayEnv>,
  form: URLSearchParams,
  client: OAuthClient,
  deps: GatewayDeps,
  oauth: OAuthDeps,
): Promise<Response> {
  const code = form.get("code");
  if (!code) return oauthError(c, 400, "invalid_request", "code is required");
  // Spent from here on, whatever is wrong with the rest of the request.
  const redeemed = await oauth.grants.redeemCode(code);
  if (!redeemed.ok) {
    const why = redeemed.reused
      ? "the code was used before: every token issued for it is revoked"
      : "the code is unknown, expired, already used, or not this client's";
    return oauthError(c, 400, "invalid_grant", why);
  }
  const grant = redeemed.code;
  if (grant.clientId !== client.id) {
    return oauthError(
      c,
      400,
      "invalid_grant",
      "the code is unknown, expired, already used, or not this client's",
    );
  }
  const verifier = form.get("code_verifier");
  if (!verifier) {
    return oauthError(c, 400, "invalid_request", "code_verifier is required (PKCE); the code is spent");
  }
  const redirectUri = form.get("redirect_uri");
  if ((grant.redirectUriGiven || redirectUri !== null) && redirectUri !== grant.redirectUri) {
    return oauthError(c, 400, "invalid_grant", "redirect_uri differs from the authorization request's");
  }
  if (!verifierMatches(verifier, grant.codeChallenge)) {
    return oauthError(c, 400, "invalid_grant", "code_verifier does not match the code_challenge");
  }
  const started = await oauth.grants.startGrant(
    {
      clientId: client.id,
      customerId: grant.customerId,
      scopes: grant.scopes,
      passwordVersion: grant.passwordVersion ?? 0,
    },
    REFRESH_TOKEN_TTL_MS,
  );
  if (!(await redeemed.started(started.id))) {
    return oauthError(
      c,
      400,
      "invalid_grant",
      "the code was used twice: every token issued for it is revoked",
    );
  }
  return userTokens(c, deps, oauth, started, grant.username, grant.scopes);
}

/**
 * Rotating refresh tokens: each use answers a new one and the old one stops working; using a
 * spent one again revokes the whole grant (RFC 9700 §4.14.2), as does a password change.
 */
async function refreshTokenGrant(
  c: Context<GatewayEnv>,
  form: URLSearchParams,
  client: OAuthClient,
  deps: GatewayDeps,
  oauth: OAuthDeps,
): Promise<Response> {
  const token = form.get("refresh_token");
  if (!token) return oauthError(c, 400, "invalid_request", "refresh_token is required");
  // Everything that can refuse the refresh runs before the token is spent (rotation).
  const requested = form.get("scope")?.split(" ").filter(Boolean);
  let refusal: Response | undefined;
  let username = "";
  const redeemed = await oauth.grants.redeemRefreshToken(token, client.id, async (candidate) => {
    const scopes = requested ? candidate.scopes.filter((s) => requested.includes(s)) : candidate.scopes;
    if (requested && scopes.length !== requested.length) {
      refusal = oauthError(c, 400, "invalid_scope", "a refresh may only narrow the scopes granted");
      return undefined;
    }
    try {
      ({ username } = await callService(deps, c, customerRpc.principal, {
        customerId: candidate.customerId,
      }));
    } catch (error) {
      if (!(error instanceof RemoteError && error.body.status === 404)) throw error;
      refusal = oauthError(c, 400, "invalid_grant", "the customer no longer exists");
      return undefined;
    }
    return scopes;
  });
  if (refusal) return refusal;
  if (!redeemed.ok) {
    const why = redeemed.reused
      ? "the refresh token was used before: every token of its grant is revoked"
      : "the refresh token is unknown, expired, revoked, or not this client's";
    return oauthError(c, 400, "invalid_grant", why);
  }
  return userTokens(c, deps, oauth, redeemed.grant, username, redeemed.scopes);
}

/** An access token of the grant: the customer's, through the client, for an hour. */
function accessToken(deps: GatewayDeps, grant: Grant, username: string, scopes: Scope[]) {
  return deps.auth.tokens.issue(
    {
      kind: "user",
      sub: String(grant.customerId),
      username,
      clientId: grant.clientId,
      scopes,
      passwordVersion: grant.passwordVersion,
      grantId: grant.id,
    },
    USER_TOKEN_TTL_SECONDS,
  );
}

async function userTokens(
  c: Context<GatewayEnv>,
  deps: GatewayDeps,
  oauth: OAuthDeps,
  grant: Grant,
  username: string,
  scopes: Scope[],
): Promise<Response> {
  const issued = await accessToken(deps, grant, username, scopes);
  const refreshToken = await oauth.grants.issueRefreshToken(grant, scopes);
  return c.json({
    access_token: issued.token,
    token_type: "Bearer",
    expires_in: USER_TOKEN_TTL_SECONDS,
    scope: scopes.join(" "),
    refresh_token: refreshToken,
  });
}

/**
 * Confidential clients prove themselves with their secret (HTTP Basic or form); public clients
 * (no secret) name themselves with client_id and prove possession through PKCE instead.
 * client_credentials is for confidential clients only.
 */
function authenticateClient(
  c: Context<GatewayEnv>,
  form: URLSearchParams,
  clients: Map<string, OAuthClient>,
  confidentialOnly: boolean,
): OAuthClient | undefined {
  const credentials = clientCredentials(c, form);
  const client = credentials ? clients.get(credentials.id) : undefined;
  if (!client || !credentials) return undefined;
  if (!client.secret) return confidentialOnly ? undefined : client;
  return credentials.secret && safeEqual(client.secret, credentials.secret) ? client : undefined;
}

function refuseAuthorization(
  c: Context<GatewayEnv>,
  parsed: Exclude<ReturnType<typeof parseAuthorizationRequest>, { ok: true }>,
): Response {
  if ("showError" in parsed) return problemPage(c, 400, "invalid_request", parsed.showError);
  const { request, error, description } = parsed.redirectError;
  return redirectError(c, request, error, description);
}

function redirectError(
  c: Context<GatewayEnv>,
  request: Omit<AuthorizationRequest, "scopes">,
  error: string,
  description: string,
): Response {
  const target = redirectWith(request.redirectUri, request.responseType === "token", {
    error,
    error_description: description,
    state: request.state,
  });
  return c.redirect(target, c.req.method === "POST" ? 303 : 302);
}

/** An HTML page; a sign-in form's may send the browser on to `redirectUri` (see its CSP). */
function page(
  c: Context<GatewayEnv>,
  html: string,
  status: ContentfulStatusCode,
  redirectUri?: string,
): Response {
  for (const [name, value] of Object.entries(pageSecurityHeaders(redirectUri))) c.header(name, value);
  return c.html(html, status);
}

/**
 * A problem the user must see (nobody to redirect to): an HTML page for a browser, and the
 * API's error body for any other client, since every non-2xx body is an Error there.
 */
function problemPage(c: Context<GatewayEnv>, status: 400, error: string, message: string): Response {
  if (!wantsHtml(c)) return oauthError(c, status, error, message);
  return page(c, errorPage(message), status);
}

/** Browsers ask for text/html when they navigate; API clients (fetch asks for any type) do not. */
function wantsHtml(c: Context<GatewayEnv>): boolean {
  return (c.req.header("accept") ?? "").includes("text/html");
}

async function readForm(c: Context<GatewayEnv>): Promise<URLSearchParams | undefined> {
  const type = c.req.header("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded")) return undefined;
  return new URLSearchParams(await c.req.text());
}

/** HTTP Basic (client_secret_basic) or client_id/client_secret in the form (client_secret_post). */
function clientCredentials(
  c: Context<GatewayEnv>,
  form: URLSearchParams,
): { id: string; secret?: string } | undefined {
  const basic = /^Basic\s+(\S+)$/i.exec(c.req.header("authorization") ?? "");
  if (basic) {
    const decoded = Buffer.from(basic[1]!, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon === -1) return undefined;
    try {
      return {
        id: decodeURIComponent(decoded.slice(0, colon)),
        secret: decodeURIComponent(decoded.slice(colon + 1)),
      };
    } catch {
      return undefined;
    }
  }
  const id = form.get("client_id");
  if (!id) return undefined;
  const secret = form.get("client_secret");
  return secret ? { id, secret } : { id };
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export function oauthError(
  c: Context<GatewayEnv>,
  status: 400 | 401,
  error: string,
  description: string,
): Response {
  const type = status === 401 ? "unauthorized" : "bad_request";
  return c.json(
    { code: status, type, message: description, error, error_description: description },
    status as ContentfulStatusCode,
  );
}
