import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { apiKeyHash } from "@cheese/contracts";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";

/**
 * The console's sign-in: an operator types an operator key (`API_KEYS`) once; the console answers
 * with a session cookie (HttpOnly, SameSite=Strict, Path=/console, Secure over https) that holds
 * not the key but `v1.<key id>.<session id>.<expiry>.<MAC>`, the MAC keyed with the key's SHA-256
 * (which only the console and the gateways hold). So the cookie works on every console replica,
 * lasts `SESSION_TTL_S`, ends when the key leaves `API_KEYS`, and sign-out revokes its session id
 * through `SessionRevocations`.
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

/** An operator key the console is configured with; the key itself is what it calls the API with. */
export interface OperatorKey {
  /** `op:<hash prefix>`, as the gateway names the key in its logs and rate limits. */
  id: string;
  key: string;
}

/** Session ids signed out before they expire. */
export interface SessionRevocations {
  revoke(sessionId: string, untilMs: number): Promise<void>;
  isRevoked(sessionId: string): Promise<boolean>;
}

export interface SessionDeps {
  /** By the key's SHA-256 (hex). */
  operatorKeys: Map<string, OperatorKey>;
  revocations: SessionRevocations;
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

/** Revocations kept in this process until the sessions they end would have expired anyway. */
export function memoryRevocations(now: () => Date): SessionRevocations {
  const revoked = new Map<string, number>();
  return {
    async revoke(sessionId, untilMs) {
      for (const [id, until] of revoked) if (until <= now().getTime()) revoked.delete(id);
      revoked.set(sessionId, untilMs);
    },
    async isRevoked(sessionId) {
      return (revoked.get(sessionId) ?? 0) > now().getTime();
    },
  };
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

const cookieOptions = (c: Context, deps: SessionDeps) =>
  ({ path: COOKIE_PATH, httpOnly: true, sameSite: "Strict", secure: deps.secure(c) }) as const;

/** Starts a session for the operator key typed in; undefined when it is not one. */
export function signIn(c: Context, deps: SessionDeps, typedKey: string): ConsoleSession | undefined {
  const hash = apiKeyHash(typedKey);
  const operator = deps.operatorKeys.get(hash);
  if (!operator) return undefined;
  const sessionId = randomUUID();
  const expiresAt = Math.floor(deps.now().getTime() / 1000) + SESSION_TTL_S;
  const body = `v1.${operator.id}.${sessionId}.${expiresAt}`;
  setCookie(c, SESSION_COOKIE, `${body}.${mac(hash, body)}`, {
    ...cookieOptions(c, deps),
    maxAge: SESSION_TTL_S,
  });
  deleteCookie(c, SIGN_IN_COOKIE, { path: COOKIE_PATH });
  return { operator, sessionId, expiresAt, csrf: mac(hash, `csrf.${sessionId}`) };
}

/** The session the request's cookie proves, if any (not revoked, not expired, key still configured). */
export async function currentSession(c: Context, deps: SessionDeps): Promise<ConsoleSession | undefined> {
  const parts = getCookie(c, SESSION_COOKIE)?.split(".");
  if (parts?.length !== 5 || parts[0] !== "v1") return undefined;
  const [, operatorId, sessionId, expiry, given] = parts as [string, string, string, string, string];
  const found = keyById(deps.operatorKeys, operatorId);
  if (!found || !sameText(given, mac(found.hash, parts.slice(0, 4).join(".")))) return undefined;
  const expiresAt = Number(expiry);
  if (!(expiresAt * 1000 > deps.now().getTime())) return undefined;
  if (await deps.revocations.isRevoked(sessionId)) return undefined;
  return { operator: found.key, sessionId, expiresAt, csrf: mac(found.hash, `csrf.${sessionId}`) };
}

/** Ends the session on every replica and clears the cookie. */
export async function signOut(c: Context, deps: SessionDeps, session: ConsoleSession) {
  await deps.revocations.revoke(session.sessionId, session.expiresAt * 1000);
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
