import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { setAnswerHeader } from "./answer-headers.ts";
import { incomingOf } from "./request-header.ts";

/** Every JSON or form body we take is small; the largest, a batch of 100 customers, is ~50 KB. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Image uploads have their own, larger limit (images/upload.ts). */
const UPLOAD_PATH = /^\/v2\/cheeses\/[^/]+\/uploadImage$/;

/**
 * Refuses bodies over 1 MiB with 413 before reading the rest (Content-Length first, then by
 * counting), so nobody can make the gateway buffer hundreds of megabytes, credentials or not.
 */
export function bodySize() {
  const limit = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: (c) => refuseUnreadBody(c, `request bodies are limited to ${MAX_BODY_BYTES} bytes`),
  });
  return createMiddleware<GatewayEnv>(async (c, next) => {
    if (UPLOAD_PATH.test(c.req.path)) return next();
    // An HTTP/1.1 request from the node server without either header has no body. Asking for
    // one would make the node adapter build a full fetch Request (with its stream) for every GET.
    if (incomingOf(c) && !c.req.header("content-length") && !c.req.header("transfer-encoding")) return next();
    return limit(c, next);
  });
}

/**
 * 413 for a body refused before it was read to its end: the rest is not read, so the connection
 * cannot carry another request (`Connection: close`). It is not closed at once either: the HTTP
 * server discards what is still in flight for a moment (a lingering close, server.ts), so the
 * client reads this answer instead of a connection reset.
 */
export function refuseUnreadBody(c: Context<GatewayEnv>, message: string): Response {
  c.header("Connection", "close");
  return errorResponse(c, 413, message);
}

/** Browsers must take every response for the type it declares (images included). */
export const noSniff = createMiddleware<GatewayEnv>(async (c, next) => {
  await next();
  setAnswerHeader(c, "X-Content-Type-Options", "nosniff");
});

/** The deepest JSON body we take; our deepest schema (an order's address) is 3 levels. */
export const MAX_JSON_DEPTH = 32;

/**
 * Refuses a JSON body nested deeper than `MAX_JSON_DEPTH` with 422 before anything parses it:
 * 5,000 nested arrays fit in 10 KB, parse fine, and then overflow the stack of whatever walks them
 * (`JSON.stringify` on the way to a service).
 */
export const jsonDepth = createMiddleware<GatewayEnv>(async (c, next) => {
  if (
    c.req.method === "GET" ||
    c.req.method === "HEAD" ||
    !/json/i.test(c.req.header("content-type") ?? "")
  ) {
    return next();
  }
  if (nestingOf(await c.req.text()) > MAX_JSON_DEPTH) {
    return errorResponse(c, 422, "request body failed validation", {
      errors: [{ field: "(body)", message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
    });
  }
  return next();
});

/** The deepest nesting of brackets outside strings in JSON text (valid or not). */
function nestingOf(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character.
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return deepest;
}
