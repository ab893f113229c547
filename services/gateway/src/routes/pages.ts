import type { Context } from "hono";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";

/**
 * The headers of a list page: `X-Total-Count`, and a `Link` to the next page when there is one
 * (this request's URL at the public base URL with the cursor replaced: same sort, filters and
 * limit).
 */
export function pageHeaders(
  deps: GatewayDeps,
  c: Context<GatewayEnv>,
  meta: { total: number; nextCursor?: string | null | undefined },
): Record<string, string> {
  const headers: Record<string, string> = { "X-Total-Count": String(meta.total) };
  if (meta.nextCursor) {
    const url = new URL(c.req.url);
    url.searchParams.set("cursor", meta.nextCursor);
    headers.Link = `<${deps.publicUrl}${url.pathname}${url.search}>; rel="next"`;
  }
  return headers;
}
