import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../env.ts";
import { setAnswerHeader } from "./answer-headers.ts";

/**
 * `Cache-Control: no-store` on every answer of a route whose answers hold personal data (an
 * account, its history, API keys, grants, orders), whatever the credential: a shared cache or a
 * browser's disk never keeps them. The one way such a route says so: first in its declaration's
 * `use` (routes/route.ts), so it covers every answer after the access rule, an
 * idempotent replay's included (docs/api.md "Headers", Caching).
 */
export const noStore: MiddlewareHandler<GatewayEnv> = async (c, next) => {
  await next();
  setAnswerHeader(c, "Cache-Control", "no-store");
};
