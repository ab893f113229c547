import { createHash, randomBytes } from "node:crypto";

/** An OAuth client as the test systems configure it in OAUTH_CLIENTS. */
export interface TestClient {
  id: string;
  secret?: string;
  redirectUri: string;
}

export interface UserTokens {
  access_token: string;
  refresh_token: string;
  scope: string;
}

/** A form-encoded POST whose redirects are left for the test to read. */
export const formPost = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(body).toString(),
  });

/**
 * The authorization-code flow with PKCE as a client drives it, without the page: the sign-in
 * form posted with the customer's credentials, the code read from the redirect, then exchanged.
 */
export async function authorizationCodeTokens(
  rootUrl: string,
  client: TestClient,
  customer: { username: string; password: string },
  scope: string,
): Promise<UserTokens> {
  const verifier = randomBytes(32).toString("base64url");
  const signedIn = await formPost(`${rootUrl}/oauth/authorize`, {
    response_type: "code",
    client_id: client.id,
    redirect_uri: client.redirectUri,
    scope,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    username: customer.username,
    password: customer.password,
    decision: "allow",
  });
  const code = new URL(signedIn.headers.get("location") ?? "http://invalid/").searchParams.get("code");
  if (signedIn.status !== 303 || !code) {
    throw new Error(`sign-in failed: ${signedIn.status} ${signedIn.headers.get("location")}`);
  }
  const exchanged = await tokenRequest(rootUrl, client, {
    grant_type: "authorization_code",
    code,
    redirect_uri: client.redirectUri,
    code_verifier: verifier,
  });
  if (exchanged.status !== 200)
    throw new Error(`exchange failed: ${exchanged.status} ${await exchanged.text()}`);
  return (await exchanged.json()) as UserTokens;
}

/** POST /oauth/token for `client` (HTTP Basic for a confidential client, client_id otherwise). */
export function tokenRequest(rootUrl: string, client: TestClient, body: Record<string, string>) {
  return formPost(`${rootUrl}/oauth/token`, ...withClient(client, body));
}

/** POST /oauth/revoke (RFC 7009) for `client`. */
export function revokeRequest(rootUrl: string, client: TestClient, body: Record<string, string>) {
  return formPost(`${rootUrl}/oauth/revoke`, ...withClient(client, body));
}

function withClient(
  client: TestClient,
  body: Record<string, string>,
): [Record<string, string>, Record<string, string>] {
  if (!client.secret) return [{ ...body, client_id: client.id }, {}];
  const basic = Buffer.from(`${client.id}:${client.secret}`).toString("base64");
  return [body, { authorization: `Basic ${basic}` }];
}
