import { randomUUID } from "node:crypto";
import type { Logger } from "@cheese/service-kit";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";

/** A caller's request id is echoed when it looks like an id; anything else is replaced. */
const acceptableId = /^[\w.:-]{1,128}$/;

/**
 * Reads or makes `X-Request-Id`, echoes it on the response, binds it into the request's logger,
 * and writes one access-log line per request.
 */
export function requestId(logger: Logger) {
  return createMiddleware<GatewayEnv>(async (c, next) => {
    const sent = c.req.header("x-request-id");
    const id = sent && acceptableId.test(sent) ? sent : randomUUID();
    const requestLogger = logger.child({ requestId: id, correlationId: id });
    c.set("request", { requestId: id, correlationId: id });
    c.set("logger", requestLogger);
    c.header("X-Request-Id", id);
    const started = performance.now();
    await next();
    c.header("X-Request-Id", id);
    requestLogger.info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      "request",
    );
  });
}
