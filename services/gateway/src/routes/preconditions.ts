import type { Precondition } from "@cheese/contracts";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";

/** A cheese's ETag is its stream revision: strong, quoted. */
export const etagOf = (revision: number) => `"${revision}"`;

/**
 * `If-Match` as the catalogue checks it: `*`, or the revisions listed. Weak tags never match
 * (RFC 9110 uses strong comparison here); a bare number is read as if it were quoted. A header
 * naming nothing usable matches nothing, so the write is refused with 412, never done blindly.
 */
export function parseIfMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return "*";
  return header.split(",").flatMap((part) => {
    const match = /^\s*(?:"(\d{1,15})"|(\d{1,15}))\s*$/.exec(part);
    return match ? [Number(match[1] ?? match[2])] : [];
  });
}

/** True when `If-None-Match` names the current ETag (or `*`): the client's copy is current. */
export function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header
    .split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .some((tag) => tag === "*" || tag === etag);
}

/**
 * Clients often send `Content-Type: application/json` on a request without a body; where the body
 * is optional that is not a malformed body, so the header is dropped and the body read as absent.
 */
export const emptyBodyIsNoBody = createMiddleware<GatewayEnv>(async (c, next) => {
  if (c.req.header("content-length") === "0" && c.req.header("content-type")) {
    const headers = new Headers(c.req.raw.headers);
    headers.delete("content-type");
    c.req.raw = new Request(c.req.raw.url, { method: c.req.raw.method, headers });
  }
  await next();
});
