import type { Context } from "hono";

/**
 * Sets a header of the answer a handler has already made, for middleware after `next()`. Hono's
 * `c.header` would remake the response around its body as a stream, and @hono/node-server would
 * then read that stream instead of writing the body it holds at once (an eighth of the gateway's
 * CPU per get, for two headers). A response whose headers cannot change (one fetched as is) is
 * remade as before. With `ifAbsent`, a value the handler set itself is kept (a route may override
 * a header the middleware sets on every answer).
 */
export function setAnswerHeader(
  c: Context,
  name: string,
  value: string,
  options: { ifAbsent?: boolean } = {},
): void {
  const headers = c.res.headers;
  const current = headers.get(name);
  if (current === value || (options.ifAbsent && current !== null)) return;
  try {
    headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}
