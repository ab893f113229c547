import type { Hono } from "hono";
import type { GatewayDeps, GatewayEnv } from "../env.ts";

/** `/oauth/*` and `/.well-known/*` on the gateway root; added by identity and access (issue 3). */
export function oauthRoutes(_app: Hono<GatewayEnv>, _deps: GatewayDeps): void {}
