import { createHash } from "node:crypto";
import type { OAuthClient, TokenScope as Scope } from "@cheese/contracts";

/** A customer can grant at most these; write:cheeses is for operator clients only (docs/identity.md). */
export const customerGrantableScopes: Scope[] = ["read:cheeses", "read:orders", "write:orders"];

export interface AuthorizationRequest {
  client: OAuthClient;
  responseType: "code" | "token";
  redirectUri: string;
  redirectUriGiven: boolean;
  scopes: Scope[];
  state?: string;
  codeChallenge?: string;
}

export type ParsedAuthorization =
  | { ok: true; request: AuthorizationRequest }
  /** Shown to the user: without a trustworthy redirect URI there is nobody to tell. */
  | { ok: false; showError: string }
  /** Sent back to the client at its (verified) redirect URI, RFC 6749 §4.1.2.1. */
  | {
      ok: false;
      redirectError: { request: Omit<AuthorizationRequest, "scopes">; error: string; description: string };
    };

/**
 * Checks an authorization request (the query of GET /oauth/authorize, or the hidden fields the
 * sign-in form posts back). The client and its redirect URI are checked first and exactly; only
 * then are other problems reported to the client by redirect.
 */
export function parseAuthorizationRequest(
  params: URLSearchParams,
  clients: Map<string, OAuthClient>,
): ParsedAuthorization {
  for (const name of ["client_id", "redirect_uri"]) {
    if (params.getAll(name).length > 1)
      return { ok: false, showError: `The request gives ${name} more than once.` };
  }
  const repeated = repeatedParameter(params);
  const clientId = params.get("client_id");
  const client = clientId ? clients.get(clientId) : undefined;
  if (!client)
    return { ok: false, showError: "Unknown client: client_id does not name a registered client." };
  const given = params.get("redirect_uri");
  if (given !== null && !client.redirectUris.includes(given)) {
    return { ok: false, showError: "The redirect_uri is not registered for this client." };
  }
  const fallback = client.redirectUris.length === 1 ? client.redirectUris[0] : undefined;
  const redirectUri = given ?? fallback;
  if (!redirectUri) {
    return {
      ok: false,
      showError: "redirect_uri is required: this client has several (or none) registered.",
    };
  }
  const type = params.get("response_type");
  const state = params.get("state") ?? undefined;
  const challenge = params.get("code_challenge") ?? undefined;
  const base = {
    client,
    responseType: type === "token" ? ("token" as const) : ("code" as const),
    redirectUri,
    redirectUriGiven: given !== null,
    ...(state !== undefined ? { state } : {}),
    ...(challenge !== undefined ? { codeChallenge: challenge } : {}),
  };
  const fail = (error: string, description: string): ParsedAuthorization => ({
    ok: false,
    redirectError: { request: base, error, description },
  });
  if (repeated) return fail("invalid_request", `${repeated} is given more than once`);
  if (type !== "code" && type !== "token") {
    return fail("unsupported_response_type", "response_type must be code or token");
  }
  // The implicit flow puts the token in a URL without proving who receives it: a confidential
  // client must use the code flow, where it authenticates with its secret (RFC 9700 §2.1.2).
  if (type === "token" && client.secret) {
    return fail("unauthorized_client", "a confidential client must use response_type=code");
  }
  if (type === "code") {
    if (!challenge) return fail("invalid_request", "code_challenge is required (PKCE with S256)");
    if (params.get("code_challenge_method") !== "S256") {
      return fail("invalid_request", "code_challenge_method must be S256");
    }
    if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
      return fail("invalid_request", "code_challenge must be the base64url SHA-256 of the verifier");
    }
  }
  const allowed = client.scopes.filter((scope) => customerGrantableScopes.includes(scope));
  const requested = params.get("scope");
  const scopes = requested ? allowed.filter((scope) => requested.split(" ").includes(scope)) : allowed;
  if (scopes.length === 0) {
    return fail("invalid_scope", "none of the requested scopes can be granted to this client by a customer");
  }
  return { ok: true, request: { ...base, scopes } };
}

/**
 * The first parameter named more than once, or undefined: RFC 6749 §3.1, "parameters MUST NOT be
 * included more than once", so neither endpoint picks one of two values.
 */
export function repeatedParameter(params: URLSearchParams): string | undefined {
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return undefined;
}

/** RFC 7636 S256: BASE64URL(SHA256(verifier)) equals the challenge. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return createHash("sha256").update(verifier).digest("base64url") === challenge;
}

/** The client's redirect URI with the result in the query (code) or the fragment (token). */
export function redirectWith(
  redirectUri: string,
  inFragment: boolean,
  values: Record<string, string | undefined>,
): string {
  const url = new URL(redirectUri);
  const pairs = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined) pairs.set(key, value);
  if (inFragment) {
    url.hash = pairs.toString();
  } else {
    for (const [key, value] of pairs) url.searchParams.set(key, value);
  }
  return url.toString();
}
