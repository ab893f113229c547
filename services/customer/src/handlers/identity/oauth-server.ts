import { timingSafeEqual } from "node:crypto";
import {
  scopes as allScopes,
  type CustomerPrincipal,
  type OAuthClient,
  type TokenScope as Scope,
} from "@cheese/contracts";
import { RemoteError } from "@cheese/messaging";
import type { Context } from "hono";
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  type AuthorizationRequest,
  parseAuthorizationRequest,
  redirectWith,
  repeatedParameter,
  verifierMatches,
} from "../../domain/oauth/authorization-request.ts";
import { errorPage, pageSecurityHeaders, signInPage } from "../../domain/oauth/authorize-page.ts";
import { type Grant, type OAuthGrants, REFRESH_TOKEN_TTL_MS } from "./oauth-grants.ts";
import type { Revocations } from "./revocations.ts";
import type { TokenIssuer } from "./tokens.ts";

/** What the server works with; `accounts` checks passwords and names customers (401 and 404 as RemoteError). */
export interface OAuthDeps {
  tokens: TokenIssuer;
  grants: OAuthGrants;
  revocations: Revocations;
  clients: Map<string, OAuthClient>;
  accounts: {
    login(username: string, password: string): Promise<CustomerPrincipal>;
    principal(customerId: number): Promise<CustomerPrincipal>;
  };
}

/** Each request's origin clients reach the API at, and the issuer tokens name: the gateway's. */
export type OAuthEnv = { Bindings: { publicUrl: string; issuer: string } };
type OAuthContext = Context<OAuthEnv>;

/** Lifetime of a client-credentials access token. */
const CLIENT_TOKEN_TTL_SECONDS = 3600;
/** Lifetime of an access token a customer granted to a client (refresh it after). */
export const USER_TOKEN_TTL_SECONDS = 3600;

/**
 * The authorization server on the gateway root: `/oauth/authorize` (sign-in and consent page),
 * `/oauth/token`, `/.well-known/jwks.json` and `/.well-known/oauth-authorization-server`. Error
 * bodies carry both our `{code, type, message}` and RFC 6749's `error` / `error_description`, so
 * standard OAuth clients understand them. docs/identity.md describes the flows.
 */
export function oauthServer(deps: OAuthDeps): Hono<OAuthEnv> {
  const { tokens, clients: oauthClients } = deps;
  const app = new Hono<OAuthEnv>();
  // Errors cross back to the gateway as the RPC's error (its status and body), as they would
  // from any handler of the service.
  app.onError((error) => {
    throw error;
  });

  app.get("/.well-known/jwks.json", (c) => {
    c.header("Cache-Control", "public, max-age=300");
    return c.json(tokens.jwks());
  });

  app.get("/.well-known/oauth-authorization-server", (c) =>
    c.json({
      issuer: c.env.issuer,
      authorization_endpoint: `${c.env.publicUrl}/oauth/authorize`,
      token_endpoint: `${c.env.publicUrl}/oauth/token`,
      revocation_endpoint: `${c.env.publicUrl}/oauth/revoke`,
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      jwks_uri: `${c.env.publicUrl}/.well-known/jwks.json`,
      scopes_supported: allScopes,
      response_types_supported: ["code", "token"],
      response_modes_supported: ["query", "fragment"],
      grant_types_supported: ["authorization_code", "client_credentials", "refresh_token", "implicit"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    }),
  );

  app.get("/oauth/authorize", (c) => {
    const parsed = parseAuthorizationRequest(new URL(c.req.url).searchParams, oauthClients);
    if (!parsed.ok) return refuseAuthorization(c, parsed);
    return page(c, signInPage(parsed.request), 200, parsed.request.redirectUri);
  });

  app.post("/oauth/authorize", async (c) => {
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
      customer = await deps.accounts.login(form.get("username") ?? "", form.get("password") ?? "");
    } catch (error) {
      if (error instanceof RemoteError && error.body.status === 401) {
        if (!wantsHtml(c)) return oauthError(c, 401, "access_denied", "invalid username or password");
        return page(c, signInPage(request, "Invalid username or password."), 401, request.redirectUri);
      }
      throw error;
    }
    if (request.responseType === "code") {
      const code = await deps.grants.issueCode({
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
    const grant = await deps.grants.startGrant(
      {
        clientId: request.client.id,
        customerId: customer.customerId,
        scopes: request.scopes,
        passwordVersion: customer.passwordVersion,
      },
      USER_TOKEN_TTL_SECONDS * 1000,
    );
    const issued = await accessToken(c, deps, grant, customer.username, request.scopes);
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

  app.post("/oauth/token", async (c) => {
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
    if (grantType === "authorization_code") return authorizationCodeGrant(c, form, client, deps);
    return refreshTokenGrant(c, form, client, deps);
  });

  app.post("/oauth/revoke", async (c) => {
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
    await revokeToken(c, deps, client, token);
    return c.body(null, 200);
  });
  return app;
}

/**
 * RFC 7009: whatever the hint says, the token is tried as what it looks like. An access token
 * (a JWT of ours, issued to this client) is revoked until it expires; a refresh token ends its
 * grant. Anything else (unknown, expired, another client's) is left alone, silently.
 */
async function revokeToken(c: OAuthContext, deps: OAuthDeps, client: OAuthClient, token: string) {
  if (token.split(".").length === 3) {
    const claims = await deps.tokens.verify(token, c.env.issuer).catch(() => undefined);
    const holder = claims?.kind === "client" ? claims.sub : claims?.clientId;
    if (claims && claims.kind !== "session" && holder === client.id) {
      await deps.revocations.revokeToken(claims.jti, claims.exp * 1000);
    }
    return;
  }
  await deps.grants.revokeByRefreshToken(token, client.id);
}

async function clientCredentialsGrant(
  c: OAuthContext,
  form: URLSearchParams,
  client: OAuthClient,
  deps: OAuthDeps,
): Promise<Response> {
  const requested = form.get("scope");
  const granted = requested
    ? requested.split(" ").filter((s): s is Scope => client.scopes.includes(s as Scope))
    : client.scopes;
  if (requested && granted.length === 0)
    return oauthError(c, 400, "invalid_scope", "none of the scopes is allowed");
  const issued = await deps.tokens.issue(
    { kind: "client", sub: client.id, scopes: granted },
    CLIENT_TOKEN_TTL_SECONDS,
    c.env.issuer,
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
  c: OAuthContext,
  form: URLSearchParams,
  client: OAuthClient,
  deps: OAuthDeps,
): Promise<Response> {
  const code = form.get("code");
  if (!code) return oauthError(c, 400, "invalid_request", "code is required");
  // Spent from here on, whatever is wrong with the rest of the request.
  const redeemed = await deps.grants.redeemCode(code);
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
  const started = await deps.grants.startGrant(
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
  return userTokens(c, deps, started, grant.username, grant.scopes);
}

/**
 * Rotating refresh tokens: each use answers a new one and the old one stops working; using a
 * spent one again revokes the whole grant (RFC 9700 §4.14.2), as does a password change.
 */
async function refreshTokenGrant(
  c: OAuthContext,
  form: URLSearchParams,
  client: OAuthClient,
  deps: OAuthDeps,
): Promise<Response> {
  const token = form.get("refresh_token");
  if (!token) return oauthError(c, 400, "invalid_request", "refresh_token is required");
  // Everything that can refuse the refresh runs before the token is spent (rotation).
  const requested = form.get("scope")?.split(" ").filter(Boolean);
  let refusal: Response | undefined;
  let username = "";
  const redeemed = await deps.grants.redeemRefreshToken(token, client.id, async (candidate) => {
    const scopes = requested ? candidate.scopes.filter((s) => requested.includes(s)) : candidate.scopes;
    if (requested && scopes.length !== requested.length) {
      refusal = oauthError(c, 400, "invalid_scope", "a refresh may only narrow the scopes granted");
      return undefined;
    }
    try {
      ({ username } = await deps.accounts.principal(candidate.customerId));
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
  return userTokens(c, deps, redeemed.grant, username, redeemed.scopes);
}

/** An access token of the grant: the customer's, through the client, for an hour. */
function accessToken(c: OAuthContext, deps: OAuthDeps, grant: Grant, username: string, scopes: Scope[]) {
  return deps.tokens.issue(
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
    c.env.issuer,
  );
}

async function userTokens(
  c: OAuthContext,
  deps: OAuthDeps,
  grant: Grant,
  username: string,
  scopes: Scope[],
): Promise<Response> {
  const issued = await accessToken(c, deps, grant, username, scopes);
  const refreshToken = await deps.grants.issueRefreshToken(grant, scopes);
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
  c: OAuthContext,
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
  c: OAuthContext,
  parsed: Exclude<ReturnType<typeof parseAuthorizationRequest>, { ok: true }>,
): Response {
  if ("showError" in parsed) return problemPage(c, 400, "invalid_request", parsed.showError);
  const { request, error, description } = parsed.redirectError;
  return redirectError(c, request, error, description);
}

function redirectError(
  c: OAuthContext,
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
function page(c: OAuthContext, html: string, status: ContentfulStatusCode, redirectUri?: string): Response {
  for (const [name, value] of Object.entries(pageSecurityHeaders(redirectUri))) c.header(name, value);
  return c.html(html, status);
}

/**
 * A problem the user must see (nobody to redirect to): an HTML page for a browser, and the
 * API's error body for any other client, since every non-2xx body is an Error there.
 */
function problemPage(c: OAuthContext, status: 400, error: string, message: string): Response {
  if (!wantsHtml(c)) return oauthError(c, status, error, message);
  return page(c, errorPage(message), status);
}

/** Browsers ask for text/html when they navigate; API clients (fetch asks for any type) do not. */
function wantsHtml(c: OAuthContext): boolean {
  return (c.req.header("accept") ?? "").includes("text/html");
}

async function readForm(c: OAuthContext): Promise<URLSearchParams | undefined> {
  const type = c.req.header("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded")) return undefined;
  return new URLSearchParams(await c.req.text());
}

/** HTTP Basic (client_secret_basic) or client_id/client_secret in the form (client_secret_post). */
function clientCredentials(
  c: OAuthContext,
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

export function oauthError(c: OAuthContext, status: 400 | 401, error: string, description: string): Response {
  const type = status === 401 ? "unauthorized" : "bad_request";
  return c.json(
    { code: status, type, message: description, error, error_description: description },
    status as ContentfulStatusCode,
  );
}
