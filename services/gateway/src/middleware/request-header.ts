import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Context } from "hono";

/**
 * Makes `c.req.header(name)` read Node's parsed request headers. @hono/node-server builds a fetch
 * `Headers` from Node's request on the first `c.req.header()` or `c.req.raw.headers` (a copy of
 * every header, validated one by one), which every request reached (Hono's validators read
 * `Content-Type` even for a path parameter): about a tenth of the gateway's CPU per get, for values
 * Node has already parsed and lower-cased in `incoming.headers`. Called first thing on every request
 * (by `observe`); a request not from the node server (`app.request` in tests) is left as it is.
 *
 * The answer is what `Headers` gives: repeated headers joined with ", ". Node keeps only the first
 * of a few (`Authorization`, `Content-Type`, ...): those are joined from its raw list. `c.req.header()`
 * without a name, `c.req.raw.headers`, and a request a middleware put in place of Node's (`c.req.raw
 * = ...`) are read through `Headers` as before.
 */
export function readNodeHeaders(c: Context): void {
  const incoming = incomingOf(c);
  if (!incoming) return;
  const req = c.req;
  const parsed = req.raw;
  const header = Object.getPrototypeOf(req).header as (this: typeof req, name?: string) => unknown;
  // A middleware that replaces the request (`emptyBodyIsNoBody`) is read from its replacement.
  req.header = ((name?: string) =>
    name === undefined || req.raw !== parsed
      ? header.call(req, name)
      : nodeHeader(incoming, name.toLowerCase())) as typeof req.header;
}

/**
 * The carrier of the request's trace context (`traceparent`, `tracestate`): Node's parsed headers
 * when the request came from the node server (both joined with ", " there, as in `Headers`).
 */
export function traceCarrier(c: Context): IncomingHttpHeaders | Headers {
  return incomingOf(c)?.headers ?? c.req.raw.headers;
}

/** Node's request, when the request came from the node server (not `app.request`). */
export const incomingOf = (c: Context): IncomingMessage | undefined =>
  (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;

function nodeHeader(incoming: IncomingMessage, name: string): string | undefined {
  if (FIRST_ONLY.has(name)) return joinedRaw(incoming.rawHeaders, name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** Headers Node's parser keeps once (the first), where a fetch `Headers` joins every copy. */
const FIRST_ONLY = new Set([
  "age",
  "authorization",
  "content-length",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
]);

function joinedRaw(raw: string[], name: string): string | undefined {
  let joined: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) {
      joined = joined === undefined ? raw[i + 1]! : `${joined}, ${raw[i + 1]}`;
    }
  }
  return joined;
}
