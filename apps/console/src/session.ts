import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { CheeseApiError, type CheeseClient, unwrap } from "@cheese/client";
import { apiKeyHash } from "@cheese/contracts";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";

/**
 * The console's sign-in (docs/security.md "Operator console"): an operator types an operator key
 * (`API_KEYS`) once; the console opens an operator session with it at the API
 * (`POST /v2/operator/sessions`) and keeps the session's token, not the key, in its cookie
 * (HttpOnly, SameSite=Strict, Path=/console, Secure over https). Every page checks the token at
 * the API (`GET /v2/operator/session`) and sign-out ends it there (`DELETE`), so a signed-out
 * cookie is refused by every console replica: the gateways share their revocation list. The
 * session lasts what the API gives it (8 hours) and ends when its key leaves `API_KEYS`.
 */
export const SESSION_COOKIE = "console_session";
/** Before sign-in: the double-submitted token of the sign-in form. */
const SIGN_IN_COOKIE = "console_sign_in";
const COOKIE_PATH = "/console";

export interface ConsoleSession {
  operator: OperatorKey;
  /** The operator session's token, as the cookie holds it. */
  token: string;
  /** The token every form of this session carries (`_csrf`). */
  csrf: string;
}

/** An operator key the console is configured with; the key itself is what it calls the API with. */
export interface OperatorKey {
  /** `op:<hash prefix>`, as the gateway names the key in its logs and rate limits. */
  id: string;
  key: string;
}

export interface SessionDeps {
  /** By the key's SHA-256 (hex). */
  operatorKeys: Map<string, OperatorKey>;
  /** Calls the API without credentials of its own: each call sends the ones it needs. */
  api: CheeseClient;
  now: () => Date;
  /** https: the cookies are Secure. */
  secure: (c: Context) => boolean;
}

/** `API_KEYS` (`key:plan,key:plan`, as the gateway reads it): the operator keys by hash. */
export function operatorKeysOf(apiKeys: string): Map<string, OperatorKey> {
  const keys = new Map<string, OperatorKey>();
  for (const entry of apiKeys.split(",").map((e) => e.trim())) {
    const key = entry.slice(0, Math.max(entry.lastIndexOf(":"), 0));
    if (!key) continue;
    const hash = apiKeyHash(key);
    keys.set(hash, { id: `op:${hash.slice(0, 12)}`, key });
  }
  return keys;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const cookieOptions = (c: Context, deps: SessionDeps) =>
  ({ path: COOKIE_PATH, httpOnly: true, sameSite: "Strict", secure: deps.secure(c) }) as const;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Only whoever holds the session's token (its HttpOnly cookie) can compute its forms' token. */
const csrfOf = (token: string) => createHmac("sha256", token).update("console csrf").digest("base64url");

/**
 * Opens a session for the operator key typed in; undefined when it is not one the console is
 * configured with (such keys never reach the API). The API's refusals are thrown.
 */
export async function signIn(
  c: Context,
  deps: SessionDeps,
  typedKey: string,
): Promise<ConsoleSession | undefined> {
  const operator = deps.operatorKeys.get(apiKeyHash(typedKey));
  if (!operator) return undefined;
  const opened = await unwrap(
    deps.api.POST("/operator/sessions", { headers: { "X-API-Key": operator.key } }),
  );
  const lifetime = Math.floor((Date.parse(opened.expiresAt) - deps.now().getTime()) / 1000);
  setCookie(c, SESSION_COOKIE, opened.token, { ...cookieOptions(c, deps), maxAge: Math.max(lifetime, 0) });
  deleteCookie(c, SIGN_IN_COOKIE, { path: COOKIE_PATH });
  return { operator, token: opened.token, csrf: csrfOf(opened.token) };
}

/**
 * The session the request's cookie holds, if the API says it is in force (not ended on any
 * replica, not expired, its key still configured). A cookie the API refuses is cleared; an API
 * that cannot answer is thrown (CheeseApiError), never taken as signed in.
 */
export async function currentSession(c: Context, deps: SessionDeps): Promise<ConsoleSession | undefined> {
  const token = getCookie(c, SESSION_COOKIE);
  if (!token) return undefined;
  let operatorId: string;
  try {
    ({ operatorId } = await unwrap(deps.api.GET("/operator/session", { headers: bearer(token) })));
  } catch (error) {
    if (!(error instanceof CheeseApiError && error.status === 401)) throw error;
    deleteCookie(c, SESSION_COOKIE, { path: COOKIE_PATH });
    return undefined;
  }
  const operator = [...deps.operatorKeys.values()].find((key) => key.id === operatorId);
  if (!operator) return undefined;
  return { operator, token, csrf: csrfOf(token) };
}

/** Ends the session at the API (so on every replica) and clears the cookie. */
export async function signOut(c: Context, deps: SessionDeps, session: ConsoleSession) {
  try {
    await unwrap(deps.api.DELETE("/operator/session", { headers: bearer(session.token) }));
  } catch (error) {
    // Ended meanwhile (another tab signed out): what sign-out wants.
    if (!(error instanceof CheeseApiError && error.status === 401)) throw error;
  }
  deleteCookie(c, SESSION_COOKIE, { path: COOKIE_PATH });
}

/**
 * The sign-in form's CSRF token: random, double-submitted (a cookie only this origin can set, and
 * a hidden field). Reused while the cookie lasts.
 */
export function signInToken(c: Context, deps: SessionDeps): string {
  const existing = getCookie(c, SIGN_IN_COOKIE);
  if (existing && /^[\w-]{43}$/.test(existing)) return existing;
  const token = randomBytes(32).toString("base64url");
  setCookie(c, SIGN_IN_COOKIE, token, { ...cookieOptions(c, deps), maxAge: 3600 });
  return token;
}

export function signInTokenMatches(c: Context, submitted: unknown): boolean {
  const cookie = getCookie(c, SIGN_IN_COOKIE);
  return typeof submitted === "string" && cookie !== undefined && sameText(cookie, submitted);
}

export function csrfMatches(session: ConsoleSession, submitted: unknown): boolean {
  return typeof submitted === "string" && sameText(session.csrf, submitted);
}
