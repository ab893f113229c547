import type { BlobStore } from "@cheese/blob-store";
import type { MessageBus } from "@cheese/messaging";
import type { Logger, RequestContext } from "@cheese/service-kit";
import type { MiddlewareHandler } from "hono";
import type { AccessRule, Caller } from "./auth/access.ts";
import type { AuthenticationDeps } from "./auth/authenticate.ts";

/** Variables every request handler can read from the Hono context. */
export interface GatewayVariables {
  request: RequestContext;
  logger: Logger;
  /** Set by the authorizer on routes with an access rule. */
  caller: Caller;
  /** Why the credentials sent were refused, if they were; routes with an access rule answer 401. */
  authProblem?: string;
}

export interface GatewayEnv {
  Variables: GatewayVariables;
}

/** What routes need from the rest of the gateway. */
export interface GatewayDeps {
  bus: MessageBus;
  /** Image bytes go straight between HTTP and the blob store; they never travel over NATS. */
  blobs: BlobStore;
  logger: Logger;
  rpcTimeoutMs: number;
  /** Middleware enforcing a route's access rule (see auth/access.ts `secured`). */
  authorize: (rule: AccessRule) => MiddlewareHandler<GatewayEnv>;
  auth: AuthenticationDeps & { issuer: string };
}
