import type { OpenAPIHono } from "@hono/zod-openapi";
import type { GatewayDeps, GatewayEnv } from "../env.ts";

/** Routes of this area are added by the issue that builds it. */
export function customersRoutes(_api: OpenAPIHono<GatewayEnv>, _deps: GatewayDeps): void {}
