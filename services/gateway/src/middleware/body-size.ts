import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";

/** Every JSON or form body we take is small; the largest, a batch of 100 customers, is ~50 KB. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Image uploads have their own, larger limit (images/upload.ts). */
const UPLOAD_PATH = /^\/v2\/cheeses\/[^/]+\/uploadImage$/;

/**
 * Refuses bodies over 1 MiB with 413 before reading the rest (Content-Length first, then by
 * counting), so nobody can make the gateway buffer hundreds of megabytes, credentials or not.
 */
export function bodySize() {
  const limit = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: (c) => {
      // The rest of the body is not read, so this connection cannot carry another request.
      c.header("Connection", "close");
      return errorResponse(c, 413, `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
    },
  });
  return createMiddleware<GatewayEnv>(async (c, next) => {
    if (UPLOAD_PATH.test(c.req.path)) return next();
    return limit(c, next);
  });
}

/** Browsers must take every response for the type it declares (images included). */
export const noSniff = createMiddleware<GatewayEnv>(async (c, next) => {
  await next();
  c.header("X-Content-Type-Options", "nosniff");
});
