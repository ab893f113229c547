import type { RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler, Next } from "hono";
import { HTTPException } from "hono/http-exception";
import { z } from "zod";
import type { GatewayEnv } from "../env.ts";
import { validationFailure } from "../errors.ts";

/** The parts of a request checked before its body, in the order they are checked. */
const TARGETS = ["query", "param", "header"] as const;
type Target = (typeof TARGETS)[number];

/** Where a route declares each part's schema (`request.params` is the path's). */
const DECLARED_AS = { query: "query", param: "params", header: "headers" } as const;

type Request = NonNullable<RouteConfig["request"]>;

/**
 * A route's request checks, as one middleware: its query, path and header (in that order, the
 * first bad value answered with the same 400 as every other validation failure,
 * `validationFailure`), then its JSON body (422), each parsed value put where `c.req.valid(...)`
 * reads it. The query, path and header are checked with zod's synchronous `safeParse` (none of the
 * request schemas refines asynchronously), and a request without a JSON body passes on without a
 * promise of its own; one with a body waits once, for the body's text. @hono/zod-openapi's own
 * validators were an async middleware per part over `safeParseAsync`, awaiting the check and then
 * its hook, each reading `Content-Type` first, and for a body a media type gate and a second
 * reading of the body: on a get by id, two of them cost more than the route.
 *
 * Returns the middleware (none when nothing is declared). @hono/zod-openapi then checks nothing:
 * a body whose schema is not zod's (an image upload's form) is read and checked by its route.
 */
export function requestChecks(request: Request | undefined): MiddlewareHandler<GatewayEnv>[] {
  if (!request) return [];
  if (request.cookies) throw new Error("a route's cookies are not checked: declare none");
  const declared = { query: request.query, params: request.params, headers: request.headers };
  const parts: Part[] = [];
  for (const target of TARGETS) {
    const schema = declared[DECLARED_AS[target]];
    if (schema) {
      const read =
        target === "header" ? headerReader(schema as z.ZodType) : target === "query" ? queryOf : paramsOf;
      parts.push({ target, schema: schema as z.ZodType, read });
    }
  }
  const body = jsonBodyOf(request.body);
  if (parts.length === 0 && !body) return [];
  // Not `async`: a request without a JSON body goes on to `next()` without a promise of its own.
  const checked: MiddlewareHandler<GatewayEnv> = (c, next) => {
    for (const { target, schema, read } of parts) {
      const result = schema.safeParse(read(c));
      if (!result.success) return Promise.resolve(validationFailure(c, target, result.error));
      c.req.addValidatedData(target, result.data as object);
    }
    return body ? checkBody(c, next, body) : next();
  };
  return [checked];
}

/** A route's JSON body as declared: its schema, and whether it must be sent. */
interface JsonBody {
  schema: z.ZodType;
  required: boolean;
}

/** `Content-Type` of a JSON body (`+json` types and parameters included), as @hono/zod-openapi took it. */
const JSON_REQUEST = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

/**
 * The body this middleware checks: one `application/json` content with a zod schema. A body with
 * a zod schema of another media type, or of several, is refused when the route is registered: no
 * route declares one, and nothing else would check it.
 */
function jsonBodyOf(body: Request["body"]): JsonBody | undefined {
  const content = body?.content;
  if (!content) return undefined;
  const zod: [string, z.ZodType][] = [];
  for (const [type, media] of Object.entries(content)) {
    const schema = media && "schema" in media ? media.schema : undefined;
    if (schema instanceof z.ZodType) zod.push([type, schema]);
  }
  if (zod.length === 0) return undefined;
  if (zod.length > 1 || zod[0]![0] !== "application/json") {
    throw new Error(
      `a request body's zod schema is checked as application/json only, not ${Object.keys(content)}`,
    );
  }
  return { schema: zod[0]![1], required: body.required === true };
}

/**
 * The body's check, as @hono/zod-openapi's media type gate and JSON validator made it: another
 * `Content-Type` than JSON's, or a body sent without one, is a 415 (`handleError`: 422 naming the
 * body); text that is not JSON a 400 saying so (422 naming the body, `handleError`); a body that
 * breaks the schema 422 naming the fields. A required body not sent is checked as `{}`; an
 * optional one not sent (no `Content-Type`: `emptyBodyIsNoBody` drops it from an empty body) is
 * `{}` unchecked.
 */
async function checkBody(c: Context<GatewayEnv>, next: Next, body: JsonBody): ReturnType<MiddlewareHandler> {
  const type = c.req.header("content-type");
  let value: unknown = {};
  if (type === undefined) {
    if (await bodySent(c)) throw unsupportedMediaType();
    if (!body.required) {
      c.req.addValidatedData("json", value as object);
      return next();
    }
  } else {
    if (!JSON_REQUEST.test(type)) throw unsupportedMediaType();
    try {
      value = JSON.parse(await c.req.text());
    } catch {
      throw new HTTPException(400, { message: "Malformed JSON in request body" });
    }
  }
  const result = body.schema.safeParse(value);
  if (!result.success) return validationFailure(c, "json", result.error);
  c.req.addValidatedData("json", result.data as object);
  return next();
}

const unsupportedMediaType = () => new HTTPException(415, { message: "Unsupported Media Type" });

/** Whether a request without `Content-Type` came with a body (it is read to know). */
async function bodySent(c: Context<GatewayEnv>): Promise<boolean> {
  return (await c.req.arrayBuffer()).byteLength > 0;
}

/** One part of the request checked: where it is, its schema, and how it is read. */
interface Part {
  target: Target;
  schema: z.ZodType;
  read: (c: Context<GatewayEnv>) => Record<string, string | string[]>;
}

/** The query as Hono's validator gives it: a name sent once is a string, sent more often a list. */
function queryOf(c: Context<GatewayEnv>): Record<string, string | string[]> {
  const value: Record<string, string | string[]> = {};
  const queries = c.req.queries();
  for (const name in queries) {
    const values = queries[name]!;
    value[name] = values.length === 1 ? values[0]! : values;
  }
  return value;
}

function paramsOf(c: Context<GatewayEnv>): Record<string, string> {
  return c.req.param() as Record<string, string>;
}

/**
 * The headers the schema names, under the names it spells them (`If-Match`), whatever their case
 * on the wire, as @hono/zod-validator gives them. Only those: the schemas are zod objects, which
 * drop every other key, and all of a request's headers (`c.req.header()`) are a fetch `Headers`
 * made from Node's request.
 */
function headerReader(schema: z.ZodType): (c: Context<GatewayEnv>) => Record<string, string> {
  if (!(schema instanceof z.ZodObject) || schema.def.catchall !== undefined) {
    throw new Error("a route's headers are declared as a zod object that drops undeclared keys");
  }
  const names = Object.keys(schema.shape).map((name) => [name.toLowerCase(), name] as const);
  return (c) => {
    const value: Record<string, string> = {};
    for (const [wire, name] of names) {
      const sent = c.req.header(wire);
      if (sent !== undefined) value[name] = sent;
    }
    return value;
  };
}
