import { callRpc, type RpcDefinition } from "@cheese/messaging";
import { contextHeaders } from "@cheese/service-kit";
import type { Context } from "hono";
import type { z } from "zod";
import type { GatewayDeps } from "./deps.ts";
import type { GatewayEnv } from "./env.ts";

/**
 * Calls a service with the request's ids and the internal deadline (or `timeoutMs`, for the
 * rare call that may take longer); errors propagate as RemoteError.
 */
export function callService<Req extends z.ZodType, Res extends z.ZodType>(
  deps: GatewayDeps,
  c: Context<GatewayEnv>,
  definition: RpcDefinition<Req, Res>,
  payload: z.input<Req>,
  options: { timeoutMs?: number } = {},
): Promise<z.output<Res>> {
  return callRpc(deps.bus, definition, payload, {
    timeoutMs: options.timeoutMs ?? deps.rpcTimeoutMs,
    headers: contextHeaders(c.get("request")),
  });
}
