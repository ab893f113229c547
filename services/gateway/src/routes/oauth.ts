import { timingSafeEqual } from "node:crypto";
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Scope } from "../auth/access.ts";
import { allScopes } from "../auth/credentials.ts";
import type { GatewayDeps, GatewayEnv } from "../env.ts";

/** Lifetime of a client-credentials access token. */
const CLIENT_TOKEN_TTL_SECONDS = 3600;

/**
 * The authorization server on the gateway root: `/oauth/token`, `/.well-known/jwks.json` and
 * `/.well-known/oauth-authorization-server`. Error bodies carry both our `{code, type, message}`
 * and RFC 6749's `error` / `error_description`, so standard OAuth clients understand them.
 */
export function oauthRoutes(app: Hono<GatewayEnv>, deps: GatewayDeps): void {
  const { tokens, oauthClients, issuer } = deps.auth;

  app.get("/.well-known/jwks.json", (c) => {
    c.header("Cache-Control", "public, max-age=300");
    return c.json(tokens.jwks());
  });

  app.get("/.well-known/oauth-authorization-server", (c) =>
    c.json({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      scopes_supported: allScopes,
      response_types_supported: ["code", "token"],
      grant_types_supported: ["authorization_code", "client_credentials", "refresh_token", "implicit"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    }),
  );

  app.post("/oauth/token", async (c) => {
    c.header("Cache-Control", "no-store");
    const form = await readForm(c);
    if (!form) return oauthError(c, 400, "invalid_request", "send the parameters form-encoded");
    const grantType = form.get("grant_type");
    const credentials = clientCredentials(c, form);
    if (grantType === "client_credentials") {
      const client = credentials ? oauthClients.get(credentials.id) : undefined;
      if (
        !client ||
        !client.secret ||
        !credentials?.secret ||
        !safeEqual(client.secret, credentials.secret)
      ) {
        c.header("WWW-Authenticate", 'Basic realm="cheese-store"');
        return oauthError(c, 401, "invalid_client", "unknown client or wrong secret");
      }
      const requested = form.get("scope");
      const granted = requested
        ? requested.split(" ").filter((s): s is Scope => client.scopes.includes(s as Scope))
        : client.scopes;
      if (requested && granted.length === 0)
        return oauthError(c, 400, "invalid_scope", "none of the scopes is allowed");
      const issued = await tokens.issue(
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
    if (!grantType) return oauthError(c, 400, "invalid_request", "grant_type is required");
    return oauthError(c, 400, "unsupported_grant_type", `grant_type ${grantType} is not supported`);
  });
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
    return {
      id: decodeURIComponent(decoded.slice(0, colon)),
      secret: decodeURIComponent(decoded.slice(colon + 1)),
    };
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
