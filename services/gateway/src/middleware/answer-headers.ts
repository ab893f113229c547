import type { ServerResponse } from "node:http";
import type { Context } from "hono";

/** On an answer made by {@link plainAnswer} through the node server: its header object. */
const OWN = Symbol("the answer's plain headers");
type Plain = Response & { [OWN]?: Record<string, string> };

/**
 * An answer whose headers are one plain object, all of them (a `c.header()` before it does not
 * reach it). Hono's `c.body` with more than one header, or after a `c.header()`, makes an undici
 * `Headers` of them, which @hono/node-server then turns back into an object for `writeHead`.
 * Through the node server this object reaches `writeHead` as it is, and `setAnswerHeader` writes
 * the middleware's headers into it.
 */
export function plainAnswer(
  c: Context,
  body: string | Uint8Array<ArrayBuffer> | null,
  status: number,
  headers: Record<string, string>,
): Response {
  if (!nodeResponseOf(c)) return new Response(body, { status, headers });
  const answer: Plain = new (plainAnswerClass())(body, { status, headers });
  answer[OWN] = headers;
  return answer;
}

/**
 * Sets a header of the answer a handler has already made, for middleware after `next()`. With
 * `ifAbsent`, a value the handler set itself is kept (a route may override a header the middleware
 * sets on every answer, as the login's `X-Rate-Limit`); without, the middleware's value is the
 * answer's.
 *
 * A {@link plainAnswer} gets it in its header object. Through the node server any other answer gets
 * an `ifAbsent` header on Node's response (`ServerResponse.setHeader`), which `writeHead(status,
 * answerHeaders)` merges under the answer's own. Otherwise (the middleware's own value, an answer
 * with `Headers`, `app.request` in tests) it is set in the answer's `Headers`: Hono's `c.header`
 * would remake the response around its body as a stream, and @hono/node-server would then read that
 * stream instead of writing the body it holds at once. A response whose headers cannot change (one
 * fetched as is) is remade.
 */
export function setAnswerHeader(
  c: Context,
  name: string,
  value: string,
  options: { ifAbsent?: boolean } = {},
): void {
  const own = (c.res as Plain)[OWN];
  if (own) {
    const key = keyOf(own, name);
    if (key === undefined) own[name] = value;
    else if (!options.ifAbsent) own[key] = value;
    return;
  }
  const outgoing = nodeResponseOf(c);
  if (outgoing && options.ifAbsent) {
    outgoing.setHeader(name, value);
    return;
  }
  const headers = c.res.headers;
  const current = headers.get(name);
  if (current === value || (options.ifAbsent && current !== null)) return;
  try {
    headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}

/** Node's response, when the request came from the node server (not `app.request`). */
const nodeResponseOf = (c: Context): ServerResponse | undefined =>
  (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;

function keyOf(headers: Record<string, string>, name: string): string | undefined {
  if (Object.hasOwn(headers, name)) return name;
  const wanted = name.toLowerCase();
  // Only a name of the same length can match: most are passed without lower-casing them.
  for (const key in headers) if (key.length === wanted.length && key.toLowerCase() === wanted) return key;
  return undefined;
}

let PlainAnswer: typeof Response | undefined;

/**
 * The node server's `Response` (@hono/node-server puts its own in place when it starts: it keeps
 * the header object it is given and writes it as it is), except that reading anything of the
 * answer but its status (its `headers`, its body, a clone) ends the plain object's use: the
 * adapter then writes from what that read made, so later headers must go there
 * (`setAnswerHeader` sees no plain object any more). Made on first use, after the node server
 * has replaced the global `Response`.
 */
function plainAnswerClass(): typeof Response {
  if (PlainAnswer && Object.getPrototypeOf(PlainAnswer) === Response) return PlainAnswer;
  const made = class extends Response {};
  for (const name of Object.getOwnPropertyNames(Response.prototype)) {
    if (name === "constructor" || name === "status" || name === "ok") continue;
    const { get, value } = Object.getOwnPropertyDescriptor(Response.prototype, name)!;
    if (get) {
      Object.defineProperty(made.prototype, name, {
        get(this: Plain) {
          this[OWN] = undefined;
          return get.call(this);
        },
      });
    } else if (typeof value === "function") {
      Object.defineProperty(made.prototype, name, {
        value(this: Plain, ...args: unknown[]) {
          this[OWN] = undefined;
          return value.apply(this, args);
        },
      });
    }
  }
  PlainAnswer = made;
  return made;
}
