import {
  callRpc,
  NoRespondersError,
  RemoteError,
  RequestTimeoutError,
  type RpcDefinition,
} from "@cheese/messaging";
import { contextHeaders, histogram, seriesOf } from "@cheese/service-kit";
import type { Context } from "hono";
import type { z } from "zod";
import type { GatewayDeps } from "./deps.ts";
import type { GatewayEnv } from "./env.ts";

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
export async function callService<Req extends z.ZodType, Res extends z.ZodType>(
  deps: GatewayDeps,
  c: Context<GatewayEnv>,
  definition: RpcDefinition<Req, Res>,
  payload: z.input<Req>,
  options: { timeoutMs?: number } = {},
): Promise<z.output<Res>> {
  const started = performance.now();
  let outcome = "ok";
  try {
    return await callRpc(deps.bus, definition, payload, {
      timeoutMs: options.timeoutMs ?? deps.rpcTimeoutMs,
      headers: contextHeaders(c.get("request")),
    });
  } catch (error) {
    outcome = outcomeOf(error);
    throw error;
  } finally {
    rpcSeries(definition.subject, outcome).observe((performance.now() - started) / 1000);
  }
}

function outcomeOf(error: unknown): string {
  if (error instanceof RequestTimeoutError || error instanceof NoRespondersError) return "unavailable";
  if (error instanceof RemoteError && error.body.status < 500) return "refused";
  return "failed";
}
