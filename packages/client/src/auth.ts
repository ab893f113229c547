import { CheeseApiError } from "./errors.ts";

/** How the client proves who it is. */
export type Auth =
  /** An operator key, or a customer's personal key (`X-API-Key`). */
  | { apiKey: string }
  /**
   * A bearer token: a session token from `POST /customer/login`, or an OAuth access token your
   * own flow obtained. A function is asked before every request (return the current token).
   */
  | { bearer: string | (() => string | Promise<string>) }
  /**
   * An OAuth confidential client: the client fetches an access token from `/oauth/token`
   * (client_credentials grant), keeps it until shortly before it expires, and fetches a new one
   * then, or at once when the API refuses it (401).
   */
  | { clientCredentials: { clientId: string; clientSecret: string; scopes?: string[] } };

/** Seconds before its expiry that a token is replaced. */
const EXPIRY_MARGIN_SECONDS = 30;

interface CachedToken {
  token: string;
  expiresAt: number;
}

/** Gives the `Authorization` or `X-API-Key` header for a request; refreshes what needs it. */
export interface Credentials {
  headers(): Promise<Record<string, string>>;
  /** After a 401: forget a fetched token. True when a new one is worth trying. */
  refused(): boolean;
}

export function credentials(
  auth: Auth | undefined,
  tokenEndpoint: string,
  fetchImpl: (request: Request) => Promise<Response>,
  now: () => number,
): Credentials {
  if (!auth) return { headers: async () => ({}), refused: () => false };
  if ("apiKey" in auth) return { headers: async () => ({ "X-API-Key": auth.apiKey }), refused: () => false };
  if ("bearer" in auth) {
    const { bearer } = auth;
    return {
      headers: async () => ({
        Authorization: `Bearer ${typeof bearer === "string" ? bearer : await bearer()}`,
      }),
      refused: () => false,
    };
  }
  const { clientId, clientSecret, scopes } = auth.clientCredentials;
  let cached: CachedToken | undefined;
  let pending: Promise<CachedToken> | undefined;

  const fetchToken = async (): Promise<CachedToken> => {
    const form = new URLSearchParams({ grant_type: "client_credentials" });
    if (scopes?.length) form.set("scope", scopes.join(" "));
    // RFC 6749 §2.3.1: both form-encoded, then Basic (ASCII after encoding, so btoa is enough).
    const basic = btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`);
    const response = await fetchImpl(
      new Request(tokenEndpoint, {
        method: "POST",
        headers: {
          Authorization: `Basic ${basic}`,
          "Content-Type": "application/x-www-form-urlencoded",
          Accept: "application/json",
        },
        body: form.toString(),
      }),
    );
    const body = (await response.json().catch(() => undefined)) as
      | { access_token?: string; expires_in?: number }
      | undefined;
    if (!response.ok || !body?.access_token) throw new CheeseApiError(response, body);
    return { token: body.access_token, expiresAt: now() + (body.expires_in ?? 3600) * 1000 };
  };

  const current = async (): Promise<string> => {
    if (cached && cached.expiresAt - EXPIRY_MARGIN_SECONDS * 1000 > now()) return cached.token;
    // Concurrent requests share one token request.
    pending ??= fetchToken().finally(() => {
      pending = undefined;
    });
    cached = await pending;
    return cached.token;
  };

  return {
    headers: async () => ({ Authorization: `Bearer ${await current()}` }),
    refused: () => {
      const hadToken = cached !== undefined;
      cached = undefined;
      return hadToken;
    },
  };
}
