import type { MessageBus } from "@cheese/messaging";
import type { Logger, RequestContext } from "@cheese/service-kit";

/** Variables every request handler can read from the Hono context. */
export interface GatewayVariables {
  request: RequestContext;
  logger: Logger;
}

export interface GatewayEnv {
  Variables: GatewayVariables;
}

/** What routes need from the rest of the gateway. */
export interface GatewayDeps {
  bus: MessageBus;
  logger: Logger;
  rpcTimeoutMs: number;
}
