import type { Context, Hono } from "hono";
import { proxy } from "hono/proxy";
import type { GatewayEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";

/**
 * `/console`: the operator console is an application of the API (apps/console), its own process;
 * the gateway only forwards the browser's requests to it (`CONSOLE_URL`), path and query as they
 * came, so its pages stay at the public URL; its answers (redirects too) go back as they are. The console calls the API back through `/v2`.
 */
export function consoleProxy(app: Hono<GatewayEnv>, consoleUrl: string): void {
  const origin = consoleUrl.replace(/\/+$/, "");
  const forward = async (c: Context<GatewayEnv>) => {
    const url = new URL(c.req.url);
    try {
      return await proxy(`${origin}${url.pathname}${url.search}`, { raw: c.req.raw, redirect: "manual" });
    } catch {
      return errorResponse(c, 503, "the operator console is not reachable; try again shortly");
    }
  };
  app.all("/console", forward);
  app.all("/console/*", forward);
}
