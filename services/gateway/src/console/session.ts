import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { apiKeyHash } from "@cheese/contracts";
import type { Clock } from "@cheese/service-kit";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import type { OperatorKey } from "../auth/credentials.ts";
import type { Revocations } from "../auth/revocations.ts";
import type { GatewayEnv } from "../env.ts";

/**
 * The console's sign-in: an operator types an operator key (`API_KEYS`) once; the gateway answers
 * with a session cookie (HttpOnly, SameSite=Strict, Path=/console, Secure over https) that holds
 * not the key but `v1.<key id>.<session id>.<expiry>.<MAC>`, the MAC keyed with the key's SHA-256
 * (which only the gateways hold). So the cookie works on every gateway replica, lasts
 * `SESSION_TTL_S`, ends when the key leaves `API_KEYS`, and sign-out revokes its session id on
 * every replica (the revocation bucket logout uses).
 */
export const SESSION_COOKIE = "console_session";
/** Before sign-in: the double-submitted token of the sign-in form. */
const SIGN_IN_COOKIE = "console_sign_in";
const SESSION_TTL_S = 8 * 3600;
const COOKIE_PATH = "/console";

export interface ConsoleSession {
  operator: OperatorKey;
  /** Revoked at sign-out. */
  sessionId: string;
  /** Epoch seconds. */
  expiresAt: number;
  /** The token every form of this session carries (`_csrf`). */
  csrf: string;
}

export interface SessionDeps {
  operatorKeys: Map<string, OperatorKey>;
  revocations: Revocations;
  clock: Clock;
  /** https: the cookies are Secure. */
  secure: (c: Context<GatewayEnv>) => boolean;
}

const mac = (keyHash: string, text: string) => createHmac("sha256", keyHash).update(text).digest("base64url");

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The operator keys by id (`op:<hash prefix>`), with the hash the session MAC is keyed with. */
function keyById(keys: Map<string, OperatorKey>, id: string): { hash: string; key: OperatorKey } | undefined {
  for (const [hash, key] of keys) if (key.id === id) return { hash, key };
  return undefined;
}

const cookieOptions = (c: Context<GatewayEnv>, deps: SessionDeps) =>
  ({ path: COOKIE_PATH, httpOnly: true, sameSite: "Strict", secure: deps.secure(c) }) as const;

/** Starts a session for the operator key typed in; undefined when it is not one. */
export function signIn(
  c: Context<GatewayEnv>,
  deps: SessionDeps,
  typedKey: string,
): ConsoleSession | undefined {
  const hash = apiKeyHash(typedKey);
  const operator = deps.operatorKeys.get(hash);
  if (!operator) return undefined;
  const sessionId = randomUUID();
  const expiresAt = Math.floor(deps.clock.now().getTime() / 1000) + SESSION_TTL_S;
  const body = `v1.${operator.id}.${sessionId}.${expiresAt}`;
  setCookie(c, SESSION_COOKIE, `${body}.${mac(hash, body)}`, {
    ...cookieOptions(c, deps),
    maxAge: SESSION_TTL_S,
  });
  deleteCookie(c, SIGN_IN_COOKIE, { path: COOKIE_PATH });
  return { operator, sessionId, expiresAt, csrf: mac(hash, `csrf.${sessionId}`) };
}

/** The session the request's cookie proves, if any (not revoked, not expired, key still configured). */
export async function currentSession(
  c: Context<GatewayEnv>,
  deps: SessionDeps,
): Promise<ConsoleSession | undefined> {
  const parts = getCookie(c, SESSION_COOKIE)?.split(".");
  if (parts?.length !== 5 || parts[0] !== "v1") return undefined;
  const [, operatorId, sessionId, expiry, given] = parts as [string, string, string, string, string];
  const found = keyById(deps.operatorKeys, operatorId);
  if (!found || !sameText(given, mac(found.hash, parts.slice(0, 4).join(".")))) return undefined;
  const expiresAt = Number(expiry);
  if (!(expiresAt * 1000 > deps.clock.now().getTime())) return undefined;
  if (await deps.revocations.isRevoked({ jti: sessionId })) return undefined;
  return { operator: found.key, sessionId, expiresAt, csrf: mac(found.hash, `csrf.${sessionId}`) };
}

/** Ends the session on every replica and clears the cookie. */
export async function signOut(c: Context<GatewayEnv>, deps: SessionDeps, session: ConsoleSession) {
  await deps.revocations.revokeToken(session.sessionId, session.expiresAt * 1000);
  deleteCookie(c, SESSION_COOKIE, { path: COOKIE_PATH });
}

/**
 * Sets the caller of a console request from its session: the operator, on the operator key's
 * rate-limit bucket and plan, as an `X-API-Key` request with that key would be. Runs after
 * `authenticate` and before the rate limit.
 */
export function consoleCaller(deps: SessionDeps) {
  return createMiddleware<GatewayEnv>(async (c, next) => {
    const session = await currentSession(c, deps);
    if (session) {
      c.set("caller", {
        kind: "operator",
        id: session.operator.id,
        plan: session.operator.plan,
        scopes: new Set(),
        via: "api_key",
      });
    }
    await next();
  });
}

/**
 * The sign-in form's CSRF token: random, double-submitted (a cookie only this origin can set, and
 * a hidden field). Reused while the cookie lasts.
 */
export function signInToken(c: Context<GatewayEnv>, deps: SessionDeps): string {
  const existing = getCookie(c, SIGN_IN_COOKIE);
  if (existing && /^[\w-]{43}$/.test(existing)) return existing;
  const token = randomBytes(32).toString("base64url");
  setCookie(c, SIGN_IN_COOKIE, token, { ...cookieOptions(c, deps), maxAge: 3600 });
  return token;
}

export function signInTokenMatches(c: Context<GatewayEnv>, submitted: unknown): boolean {
  const cookie = getCookie(c, SIGN_IN_COOKIE);
  return typeof submitted === "string" && cookie !== undefined && sameText(cookie, submitted);
}

export function csrfMatches(session: ConsoleSession, submitted: unknown): boolean {
  return typeof submitted === "string" && sameText(session.csrf, submitted);
}
