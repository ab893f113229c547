import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler, Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { GatewayEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { incomingOf } from "./request-header.ts";

/** Every JSON or form body we take is small; the largest, a batch of 100 customers, is ~50 KB. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Image uploads have their own, larger limit (images/upload.ts). */
const UPLOAD_PATH = /^\/v2\/cheeses\/[^/]+\/uploadImage$/;

/** The console's requests are forwarded with their body unread (console-proxy.ts). */
const CONSOLE_PATH = /^\/console(\/|$)/;

/**
 * Refuses bodies over 1 MiB with 413 before reading the rest (Content-Length first, then by
 * counting), so nobody can make the gateway buffer hundreds of megabytes, credentials or not.
 *
 * A body from the node server with its Content-Length (Node's parser holds it to that length)
 * is read, when something first asks for it (`c.req.text()`, `json()`, the validators), from
 * Node's request as Buffers: reading it through the fetch `Request` the node adapter would build
 * (its Headers, AbortController and web stream) cost the gateway ~15 % of its CPU per create. A
 * chunked body (counted as it comes), an image upload (read as multipart by its route, as it
 * streams), the console's requests (forwarded as they came) and a request not from the node
 * server (`app.request` in tests) keep the fetch body.
 */
export function bodySize() {
  const refuse = (c: Context<GatewayEnv>) =>
    refuseUnreadBody(c, `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
  const limit = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: refuse });
  // Not `async`: a request passes on to `next()` without a promise of its own.
  const bodySized: MiddlewareHandler<GatewayEnv> = (c, next) => {
    const path = c.req.path;
    if (UPLOAD_PATH.test(path)) return next();
    const incoming = incomingOf(c);
    if (!incoming || CONSOLE_PATH.test(path) || c.req.header("transfer-encoding")) return limit(c, next);
    const length = c.req.header("content-length");
    // An HTTP/1.1 request without Content-Length or Transfer-Encoding has no body.
    if (length === undefined) return next();
    if (Number(length) > MAX_BODY_BYTES) return Promise.resolve(refuse(c));
    readFromNode(c, incoming);
    return next();
  };
  return bodySized;
}

/** Hono's body cache, with where its reading from Node comes from. */
type BodyCache = Record<string, unknown> & { [SOURCE]?: { incoming: IncomingMessage; key: string } };
const SOURCE = Symbol("the node request the body is read from");

/**
 * Makes the request's body, where Hono keeps the promise of each reading of it (and derives the
 * others from), Node's request read to its end on first use: as text for JSON (what the
 * validators and `jsonDepth` read), as bytes otherwise (a form stays byte for byte). Module-level
 * functions, not closures made per request.
 */
function readFromNode(c: Context<GatewayEnv>, incoming: IncomingMessage): void {
  const cache = c.req.bodyCache as BodyCache;
  const key = /json/i.test(c.req.header("content-type") ?? "") ? "text" : "arrayBuffer";
  cache[SOURCE] = { incoming, key };
  Object.defineProperty(cache, key, { configurable: true, enumerable: true, get: readOnFirstUse });
}

function readOnFirstUse(this: BodyCache): Promise<string | ArrayBuffer> {
  const { incoming, key } = this[SOURCE]!;
  const body = readBody(incoming).then<string | ArrayBuffer>(key === "text" ? asText : asBytes);
  Object.defineProperty(this, key, { value: body, configurable: true, enumerable: true, writable: true });
  return body;
}

function asText(bytes: Buffer): string {
  return bytes.toString("utf8");
}

function asBytes(bytes: Buffer): ArrayBuffer {
  return new Uint8Array(bytes).slice().buffer;
}

/** A body being read from Node's request. */
interface Reading {
  chunks: Buffer[];
  size: number;
  resolve: (body: Buffer) => void;
  reject: (error: Error) => void;
}
const READING = Symbol("the body being read");
type ReadFrom = IncomingMessage & { [READING]?: Reading };

/** The whole body of Node's request. */
function readBody(incoming: ReadFrom): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    incoming[READING] = { chunks: [], size: 0, resolve, reject };
    incoming.on("data", onBodyData);
    incoming.on("end", onBodyEnd);
    incoming.on("error", onBodyError);
    incoming.on("close", onBodyClose);
  });
}

function onBodyData(this: ReadFrom, chunk: Buffer): void {
  const reading = this[READING]!;
  reading.size += chunk.length;
  reading.chunks.push(chunk);
}

function onBodyEnd(this: ReadFrom): void {
  const { chunks, size, resolve } = stopReading(this);
  resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
}

function onBodyError(this: ReadFrom, error: Error): void {
  stopReading(this).reject(error);
}

function onBodyClose(this: ReadFrom): void {
  stopReading(this).reject(new Error("the request closed before its body ended"));
}

function stopReading(incoming: ReadFrom): Reading {
  const reading = incoming[READING]!;
  incoming[READING] = undefined;
  incoming.off("data", onBodyData);
  incoming.off("end", onBodyEnd);
  incoming.off("error", onBodyError);
  incoming.off("close", onBodyClose);
  return reading;
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

/** The deepest JSON body we take; our deepest schema (an order's address) is 3 levels. */
export const MAX_JSON_DEPTH = 32;

/**
 * Refuses a JSON body nested deeper than `MAX_JSON_DEPTH` with 422 before anything parses it:
 * 5,000 nested arrays fit in 10 KB, parse fine, and then overflow the stack of whatever walks them
 * (`JSON.stringify` on the way to a service).
 */
export const jsonDepth: MiddlewareHandler<GatewayEnv> = (c, next) =>
  c.req.method === "GET" || c.req.method === "HEAD" || !/json/i.test(c.req.header("content-type") ?? "")
    ? next()
    : checkDepth(c, next);

/** Not `async` above: a get passes on to `next()` without a promise of its own. */
async function checkDepth(c: Context<GatewayEnv>, next: Next): ReturnType<MiddlewareHandler> {
  if (nestingOf(await c.req.text()) > MAX_JSON_DEPTH) {
    return errorResponse(c, 422, "request body failed validation", {
      errors: [{ field: "(body)", message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
    });
  }
  return next();
}

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
