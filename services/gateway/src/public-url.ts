import { isIP } from "node:net";
import { z } from "zod";

/**
 * The public base URL (`PUBLIC_URL`): the origin clients reach the API at, behind whatever proxy.
 * Every URL the API stores or returns (Location, Link, image URLs, the OAuth metadata) is built
 * from it, never from the request's Host header, which the caller chooses.
 */
export const publicUrlSchema = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(
    z
      .url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://api.example.com" })
      .refine((v) => {
        if (!URL.canParse(v)) return true; // the URL check has said so already
        const url = new URL(v);
        return !url.username && !url.password && url.pathname === "/" && !url.search && !url.hash;
      }, "must be an origin only: scheme, host and optional port, without path, query or credentials")
      .transform((v) => new URL(v).origin)
      .optional(),
  );

/** Unset, the gateway's own address: GATEWAY_HOST unless it listens on every address. */
export function defaultPublicUrl(host: string, port: number): string {
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return `http://${isIP(reachable) === 6 ? `[${reachable}]` : reachable}:${port}`;
}
