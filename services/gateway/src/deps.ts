import type { BlobStore } from "@cheese/blob-store";
import type { ReadCache } from "@cheese/catalogue/read-cache";
import type { MessageBus } from "@cheese/messaging";
import type { Clock, Logger } from "@cheese/service-kit";
import type { MiddlewareHandler } from "hono";
import type { AccessRule } from "./auth/access.ts";
import type { AuthenticationDeps } from "./auth/authenticate.ts";
import type { GatewayEnv } from "./env.ts";

/** What routes need from the rest of the gateway, built once in `main.ts`. */
export interface GatewayDeps {
  bus: MessageBus;
  /** Image bytes go straight between HTTP and the blob store; they never travel over NATS. */
  blobs: BlobStore;
  logger: Logger;
  /** The time tokens, codes, revocations and rate limits read. */
  clock: Clock;
  rpcTimeoutMs: number;
  /** The origin every URL the API stores or returns is built from (`PUBLIC_URL`), never the Host header. */
  publicUrl: string;
  /** Where `/console` is forwarded (`CONSOLE_URL`); unset: no console behind this gateway. */
  consoleUrl?: string | undefined;
  /** Middleware enforcing a route's access rule (see routes/route.ts `route`). */
  authorize: (rule: AccessRule) => MiddlewareHandler<GatewayEnv>;
  auth: AuthenticationDeps & { issuer: string };
  /** Catalogue reads kept between the catalogue's change notices; absent with `READ_CACHE=off`. */
  readCache?: ReadCache | undefined;
}
