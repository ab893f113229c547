import type { RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import type { GatewayEnv } from "../env.ts";
import { validationFailure } from "../errors.ts";

/** The parts of a request checked before its body, in the order they are checked. */
const TARGETS = ["query", "param", "header"] as const;
type Target = (typeof TARGETS)[number];

/** Where a route declares each part's schema (`request.params` is the path's). */
const DECLARED_AS = { query: "query", param: "params", header: "headers" } as const;

type Request = NonNullable<RouteConfig["request"]>;

/**
 * A route's query, path and header checks, as one middleware that answers the first bad value (in
 * that order) with the same 400 as every other validation failure (`validationFailure`) and
 * otherwise puts each parsed value where `c.req.valid(...)` reads it, then passes the request on
 * without a promise of its own: zod's synchronous `safeParse` (none of these schemas refines
 * asynchronously). @hono/zod-openapi's own validators are an async middleware each over
 * `safeParseAsync`, awaiting the check and then the hook, and each reads `Content-Type` first: on
 * a get by id, two of them cost more than the route. The body is still checked by
 * @hono/zod-openapi (it has to be read first).
 *
 * Returns the middleware (none when nothing is declared) and the request declaration left for
 * @hono/zod-openapi (the body alone).
 */
export function requestChecks(request: Request | undefined): {
  checks: MiddlewareHandler<GatewayEnv>[];
  rest: Request | undefined;
} {
  if (!request) return { checks: [], rest: request };
  const { query, params, headers, ...rest } = request;
  const declared = { query, params, headers };
  const parts: Part[] = [];
  for (const target of TARGETS) {
    const schema = declared[DECLARED_AS[target]];
    if (schema) {
      const read =
        target === "header" ? headerReader(schema as z.ZodType) : target === "query" ? queryOf : paramsOf;
      parts.push({ target, schema: schema as z.ZodType, read });
    }
  }
  if (parts.length === 0) return { checks: [], rest };
  // Not `async`: a request that passes goes on to `next()` without a promise of its own.
  const checked: MiddlewareHandler<GatewayEnv> = (c, next) => {
    for (const { target, schema, read } of parts) {
      const result = schema.safeParse(read(c));
      if (!result.success) return Promise.resolve(validationFailure(c, target, result.error));
      c.req.addValidatedData(target, result.data as object);
    }
    return next();
  };
  return { checks: [checked], rest };
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
 * The headers under the names the schema spells them (`If-Match`), whatever their case on the wire,
 * as @hono/zod-validator does.
 */
function headerReader(schema: z.ZodType): (c: Context<GatewayEnv>) => Record<string, string> {
  const object = schema as unknown as { shape?: object; in?: { shape?: object } };
  const shape = object.shape ?? object.in?.shape ?? {};
  const named = new Map(Object.keys(shape).map((name) => [name.toLowerCase(), name]));
  return (c) => {
    const value: Record<string, string> = {};
    const sent = c.req.header();
    for (const name in sent) value[named.get(name) ?? name] = sent[name]!;
    return value;
  };
}
