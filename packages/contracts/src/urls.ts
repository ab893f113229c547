import { z } from "@hono/zod-openapi";

/**
 * What a URL the API stores may hold, unencoded: the printable ASCII characters RFC 3986 allows
 * in a URI. No space, control character, non-ASCII character, nor `<`, `>`, `"`, `` ` ``, `{`,
 * `}`, `|`, `\` or `^`, so a stored URL carries no markup, whatever page shows it later.
 */
const URI_CHARACTERS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/;

/** An absolute http or https URL with a host, written as RFC 3986 allows (see URI_CHARACTERS). */
export function isHttpUrl(value: string): boolean {
  if (!URI_CHARACTERS.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/**
 * The one schema of a URL the API stores for a caller (photoUrls, webhook URLs): at most
 * `maxLength` characters, an absolute http(s) URL ({@link isHttpUrl}), else 422 with `message`
 * naming the field. `javascript:`, `data:` and markup never get in.
 */
export function httpUrl(maxLength: number, message: string) {
  return z.string().min(1).max(maxLength).refine(isHttpUrl, message).openapi({ format: "uri" });
}
