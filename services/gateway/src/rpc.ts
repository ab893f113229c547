import { createHash } from "node:crypto";
import {
  type BodyMetaOf,
  callRpc,
  callRpcPassing,
  NoRespondersError,
  RemoteError,
  RequestTimeoutError,
  type RpcDefinition,
} from "@cheese/messaging";
import { contextHeaders, histogram, type IdempotencyKey, seriesOf } from "@cheese/service-kit";
import type { Context, MiddlewareHandler, Next, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { JSONParsed } from "hono/utils/types";
import stableStringify from "safe-stable-stringify";
import type { z } from "zod";
import type { GatewayDeps } from "./deps.ts";
import type { GatewayEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { plainAnswer } from "./middleware/answer-headers.ts";

const rpcDuration = histogram({
  name: "cheese_rpc_client_duration_seconds",
  help: "Time the gateway waited for a service's answer, by subject and outcome (ok, refused: 4xx, failed: 5xx, unavailable: no answer in time or no service)",
  labelNames: ["subject", "outcome"],
});
const rpcSeries = seriesOf((subject, outcome) => rpcDuration.labels(subject, outcome));

/**
 * Calls a service with the request's ids, its trace and the internal deadline (or `timeoutMs`,
 * for the rare call that may take longer); errors propagate as RemoteError.
 */
export function callService<Req extends z.ZodType, Res extends z.ZodType>(
  deps: GatewayDeps,
  c: Context<GatewayEnv>,
  definition: RpcDefinition<Req, Res>,
  payload: z.input<Req>,
  options: { timeoutMs?: number } = {},
): Promise<z.output<Res>> {
  return timed(definition.subject, () =>
    callRpc(deps.bus, definition, payload, callOptions(deps, c, options.timeoutMs)),
  );
}

/**
 * The handler of a route that only forwards: the request's validated input (`payload(c)`) to the
 * service, and its reply (or the part of it `answer` picks) as the answer with `status` (204: no
 * body).
 */
export function forward<
  C extends Context<GatewayEnv, string, {}>,
  Req extends z.ZodType,
  Res extends z.ZodType,
  S extends ContentfulStatusCode | 204,
  Body = z.output<Res>,
>(
  definition: RpcDefinition<Req, Res>,
  status: S,
  payload: (c: C) => z.input<Req>,
  answer?: (reply: z.output<Res>) => Body,
) {
  type Answer = S extends 204
    ? Response & TypedResponse<null, 204, "body">
    : Response & TypedResponse<JSONParsed<NoInfer<Body>>, S, "json">;
  return (deps: GatewayDeps) => async (c: C) => {
    const reply = await callService(deps, c, definition, payload(c));
    if (status === 204) return c.body(null, 204) as Answer;
    return c.json(answer ? answer(reply) : reply, status as ContentfulStatusCode) as Answer;
  };
}

/** JSON text of a `T` as a service encoded it (typed for the route it answers). */
export type JsonText<T> = (string | Uint8Array) & { readonly encodes?: T };

type BodyOf<Output, Field extends string> = Field extends "."
  ? Output
  : Field extends keyof Output
    ? Output[Field]
    : never;

/**
 * `callService` for a definition whose reply is passed through (`passThrough`): the body as the
 * service encoded it, for {@link answerPassed}, and the fields of its `meta`.
 */
export function passService<
  Req extends z.ZodType,
  Res extends z.ZodType,
  Field extends string,
  Meta extends keyof z.output<Res> & string,
  BodyMeta extends string = never,
>(
  deps: GatewayDeps,
  c: Context<GatewayEnv>,
  definition: RpcDefinition<Req, Res> & {
    passThrough: { body: Field; meta: readonly Meta[]; bodyMeta?: readonly BodyMeta[] };
  },
  payload: z.input<Req>,
): Promise<{
  meta: Pick<z.output<Res>, Meta> & BodyMetaOf<z.output<Res>, Field, BodyMeta>;
  body: JsonText<BodyOf<z.output<Res>, Field>>;
}> {
  return timed(definition.subject, () =>
    callRpcPassing(deps.bus, definition, payload, callOptions(deps, c, undefined)),
  );
}

/**
 * Answers with a passed-through body: the JSON the service encoded after checking it against the
 * response schema, written without being decoded and encoded again here (as `c.json` would
 * answer it: same type, same Content-Type). Its headers are `Content-Type` and `headers`, one
 * plain object ({@link plainAnswer}): pass every header of the answer here, as a `c.header()`
 * before it does not reach it.
 */
export function answerPassed<T, S extends ContentfulStatusCode>(
  c: Context<GatewayEnv>,
  body: JsonText<T>,
  status: S,
  headers: Record<string, string> = {},
): Response & TypedResponse<T, S, "json"> {
  const bytes = body as string | Uint8Array<ArrayBuffer>;
  return plainAnswer(c, bytes, status, {
    "Content-Type": "application/json",
    ...headers,
  }) as unknown as Response & TypedResponse<T, S, "json">;
}

function callOptions(deps: GatewayDeps, c: Context<GatewayEnv>, timeoutMs: number | undefined) {
  return { timeoutMs: timeoutMs ?? deps.rpcTimeoutMs, headers: contextHeaders(c.get("request")) };
}

async function timed<T>(subject: string, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  let outcome = "ok";
  try {
    return await call();
  } catch (error) {
    outcome = outcomeOf(error);
    throw error;
  } finally {
    rpcSeries(subject, outcome).observe((performance.now() - started) / 1000);
  }
}

function outcomeOf(error: unknown): string {
  if (error instanceof RequestTimeoutError || error instanceof NoRespondersError) return "unavailable";
  if (error instanceof RemoteError && error.body.status < 500) return "refused";
  return "failed";
}

/**
 * `Idempotency-Key`, the HTTP half (docs/api.md "Idempotency-Key"): 400 unless the header is 1 to
 * 255 visible ASCII characters; else the key, scoped to the caller, for the route to pass down with
 * `idempotencyOf(c)` to the service that keeps its one record (`claimOnce`). A route takes it in
 * its `use`, so it runs after the access rule has found the caller.
 */

const HEADER = "idempotency-key";
const acceptableKey = /^[\x21-\x7e]{1,255}$/;

const scopes = new WeakMap<Request, IdempotencyKey>();

/** The scoped key of the current request, when it carries an Idempotency-Key. */
export function idempotencyOf(c: Context<GatewayEnv>): { idempotency?: IdempotencyKey } {
  const scope = scopes.get(c.req.raw);
  return scope ? { idempotency: scope } : {};
}

/** The header marking an answer that repeats the first answer of its Idempotency-Key. */
export function replayedHeader(reply: { replayed?: true }): { "Idempotent-Replayed"?: "true" } {
  return reply.replayed ? { "Idempotent-Replayed": "true" } : {};
}

// Not `async`: a request without the header passes on to `next()` without a promise of its own.
export const idempotency: MiddlewareHandler<GatewayEnv> = (c, next) => {
  const sent = c.req.header(HEADER);
  if (sent === undefined) return next();
  if (!acceptableKey.test(sent)) {
    return Promise.resolve(
      errorResponse(c, 400, "Idempotency-Key must be 1 to 255 visible ASCII characters"),
    );
  }
  return scoped(c, next, sent);
};

/** Keeps the request's key, scoped to its caller, with the fingerprint of its body. */
async function scoped(c: Context<GatewayEnv>, next: Next, sent: string): Promise<void> {
  const caller = c.get("caller");
  scopes.set(c.req.raw, {
    // Per caller, and per customer within a caller: every customer of one OAuth client shares
    // the client's identity for rate limits, but never each other's keys.
    key: sha256(`${caller.id}\n${caller.customer?.id ?? ""}\n${sent}`),
    fingerprint: sha256(`${c.req.method} ${c.req.path}\n${canonical(await c.req.text())}`),
  });
  return next();
}

/** The same JSON in another key order or spacing is the same request. */
function canonical(body: string): string {
  try {
    return stableStringify(JSON.parse(body)) ?? body;
  } catch {
    return body;
  }
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
