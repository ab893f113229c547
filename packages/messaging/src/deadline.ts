import type { Headers } from "./port.ts";

/**
 * The header carrying a request's deadline: epoch milliseconds after which the caller has given
 * up (answered 503). A request that reaches a server later (held in a client's buffer while NATS
 * was down, then flushed on reconnect) is not handled: its work would happen after the caller
 * was told it did not, so a refused order would still be placed. Both adapters follow it.
 * Absolute time, so it assumes hosts whose clocks agree (NTP), as token expiry does.
 */
export const DEADLINE_HEADER = "x-deadline";

/** The request's headers with its deadline: now + timeoutMs, or an earlier one already set. */
export function withDeadline(headers: Headers | undefined, timeoutMs: number, now = Date.now()): Headers {
  const own = now + timeoutMs;
  const given = Number(headers?.[DEADLINE_HEADER]);
  const deadline = Number.isFinite(given) && given > 0 ? Math.min(given, own) : own;
  return { ...headers, [DEADLINE_HEADER]: String(deadline) };
}

/** True when the request carries a deadline that has passed. */
export function pastDeadline(headers: Headers, now = Date.now()): boolean {
  const deadline = Number(headers[DEADLINE_HEADER]);
  return Number.isFinite(deadline) && deadline > 0 && now > deadline;
}
