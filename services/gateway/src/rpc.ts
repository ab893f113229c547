import {
  callRpc,
  callRpcPassing,
  NoRespondersError,
  RemoteError,
  RequestTimeoutError,
  type RpcDefinition,
} from "@cheese/messaging";
import { contextHeaders, histogram, seriesOf } from "@cheese/service-kit";
import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";
import type { GatewayDeps } from "./deps.ts";
import type { GatewayEnv } from "./env.ts";
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
>(
  deps: GatewayDeps,
  c: Context<GatewayEnv>,
  definition: RpcDefinition<Req, Res> & { passThrough: { body: Field; meta: readonly Meta[] } },
  payload: z.input<Req>,
): Promise<{ meta: Pick<z.output<Res>, Meta>; body: JsonText<BodyOf<z.output<Res>, Field>> }> {
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
