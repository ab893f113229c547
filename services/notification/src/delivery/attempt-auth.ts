import { type Clock, systemClock } from "@cheese/service-kit";
import type { Resolver } from "../security/address-policy.ts";
import type { SealedAuth } from "../security/receiver-auth.ts";
import type { SealedSecret } from "../security/secrets.ts";
import { sendAttempt } from "./sender.ts";

/** A token is taken for expired this long before its `expires_in` says, so it never expires in flight. */
const EXPIRY_MARGIN_MS = 30_000;

/** Why a delivery could not get its OAuth2 token; its message holds no credential. */
export class TokenError extends Error {
  override readonly name = "TokenError";
}

/** The request headers that authenticate an attempt, and what a 401 may do about them. */
export interface AttemptAuth {
  headers: Record<string, string>;
  /** Names whose values the recorded request redacts (Authorization always is). */
  credentialHeaders: string[];
  /** For an OAuth2 registration: forgets the token these headers carry and gets a new one. */
  refresh?: () => Promise<Record<string, string>>;
}

/** The attempt of a registration without an `auth`: nothing added, nothing to redact. */
export const NO_RECEIVER_AUTH: AttemptAuth = Object.freeze({ headers: {}, credentialHeaders: [] });

interface Token {
  accessToken: string;
  /** Epoch ms past which it is not used; undefined: until a receiver answers 401. */
  expiresAt: number | undefined;
}

/** A registration's token, got (or being got) with the client secret sealed as `version`. */
interface CachedToken {
  version: string;
  token: Promise<Token>;
}

type OAuth2 = Extract<SealedAuth, { type: "oauth2_client_credentials" }>;

/**
 * A registration's receiver auth at attempt time (docs/webhooks.md "Receiver auth"): static
 * headers opened from their sealed values, or an OAuth2 bearer token got with the client
 * credentials grant (RFC 6749 §4.4, the client authenticated with HTTP Basic, §2.3.1). A token is
 * kept in this process until shortly before its `expires_in` (without one, until a receiver
 * answers 401) and shared by the registration's attempts; concurrent attempts wait for one
 * request. The token request goes through the delivery's own sender, so the token URL passes the
 * same address guard at connect time, with the same time-out.
 */
export class ReceiverAuth {
  private readonly tokens = new Map<number, CachedToken>();

  constructor(
    private readonly options: {
      open: (sealed: SealedSecret) => string;
      timeoutMs: number;
      allowPrivate: boolean;
      resolve?: Resolver;
      clock?: Clock;
    },
  ) {}

  private now(): number {
    return (this.options.clock ?? systemClock).now().getTime();
  }

  /** The attempt's auth headers; a TokenError when the token endpoint gave none. */
  async forAttempt(webhookId: number, auth: SealedAuth): Promise<AttemptAuth> {
    if (auth.type === "headers") {
      return {
        headers: Object.fromEntries(auth.headers.map(({ name, value }) => [name, this.options.open(value)])),
        credentialHeaders: auth.headers.map(({ name }) => name),
      };
    }
    const { accessToken } = await this.token(webhookId, auth);
    return {
      headers: { authorization: `Bearer ${accessToken}` },
      credentialHeaders: [],
      // Attempts refused together get one new token between them.
      refresh: async () => ({
        authorization: `Bearer ${(await this.token(webhookId, auth, accessToken)).accessToken}`,
      }),
    };
  }

  /** The registration's token: the one kept, unless expired, got with another secret, or `stale`. */
  private async token(webhookId: number, auth: OAuth2, stale?: string): Promise<Token> {
    const version = auth.clientSecret.data;
    const cached = this.tokens.get(webhookId);
    if (cached?.version === version) {
      const token = await cached.token.catch(() => undefined);
      if (
        token &&
        token.accessToken !== stale &&
        (token.expiresAt === undefined || token.expiresAt > this.now())
      )
        return token;
      // Another attempt started getting a new one meanwhile: that one.
      if (this.tokens.get(webhookId) !== cached) return this.token(webhookId, auth, stale);
    }
    const fetching = { version, token: this.fetchToken(auth) };
    this.tokens.set(webhookId, fetching);
    try {
      return await fetching.token;
    } catch (error) {
      if (this.tokens.get(webhookId) === fetching) this.tokens.delete(webhookId);
      throw error;
    }
  }

  private async fetchToken(auth: OAuth2): Promise<Token> {
    const form = new URLSearchParams({ grant_type: "client_credentials" });
    if (auth.scope) form.set("scope", auth.scope);
    // RFC 6749 §2.3.1: id and secret form-encoded (Appendix B) before Basic's base64.
    const credentials = `${formEncoded(auth.clientId)}:${formEncoded(this.options.open(auth.clientSecret))}`;
    const started = this.now();
    const result = await sendAttempt({
      url: auth.tokenUrl,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
        authorization: `Basic ${Buffer.from(credentials).toString("base64")}`,
      },
      body: form.toString(),
      timeoutMs: this.options.timeoutMs,
      allowPrivate: this.options.allowPrivate,
      ...(this.options.resolve ? { resolve: this.options.resolve } : {}),
      counted: false,
    });
    if (result.statusCode === null) throw new TokenError(`token endpoint: ${result.error}`);
    const body = parseJson(result.response?.body);
    if (!result.ok) {
      const code =
        typeof body?.error === "string" && /^[\w.-]{1,64}$/.test(body.error) ? ` (${body.error})` : "";
      throw new TokenError(`token endpoint answered ${result.statusCode}${code}`);
    }
    if (result.response?.bodyTruncated) throw new TokenError("token endpoint's answer is over 4 KiB");
    const accessToken = body?.access_token;
    if (typeof accessToken !== "string" || accessToken === "" || /[^\x21-\x7e]/.test(accessToken))
      throw new TokenError("token endpoint's answer has no usable access_token");
    if (typeof body?.token_type !== "string" || body.token_type.toLowerCase() !== "bearer")
      throw new TokenError("token endpoint's answer is not a bearer token");
    const expiresIn = body.expires_in;
    const expiresAt =
      typeof expiresIn === "number" && Number.isFinite(expiresIn) && expiresIn > 0
        ? started + Math.max(expiresIn * 1000 - EXPIRY_MARGIN_MS, expiresIn * 500)
        : undefined;
    return { accessToken, expiresAt };
  }
}

/** application/x-www-form-urlencoded, as URLSearchParams writes it (a space is `+`). */
const formEncoded = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);

function parseJson(text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
