import { randomUUID } from "node:crypto";
import {
  counter,
  endSpan,
  extractTrace,
  histogram,
  type Logger,
  SpanKind,
  seriesOf,
  startSpan,
  traceIdOf,
  tracerFor,
} from "@cheese/service-kit";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { GatewayEnv } from "../env.ts";
import { setAnswerHeader } from "./answer-headers.ts";
import { readNodeHeaders, traceCarrier } from "./request-header.ts";

/** A caller's request id is echoed when it looks like an id; anything else is replaced. */
const acceptableId = /^[\w.:-]{1,128}$/;

const requests = counter({
  name: "cheese_http_requests_total",
  help: "Requests the gateway answered, by method, route template and status",
  labelNames: ["method", "route", "status"],
});
const durations = histogram({
  name: "cheese_http_request_duration_seconds",
  help: "Time the gateway took to answer, by method, route template and status",
  labelNames: ["method", "route", "status"],
});
/** Per method, route template and status: its counter, its histogram and the span's name. */
const series = seriesOf((method, route, status) => ({
  spanName: `${method} ${route}`,
  requests: requests.labels(method, route, status),
  duration: durations.labels(method, route, status),
}));

/** Probes poll constantly; they are counted but make no spans. */
const UNTRACED = new Set(["/healthz", "/readyz"]);

/**
 * The first middleware of every request: reads or makes `X-Request-Id` (echoed on the response,
 * with `X-Content-Type-Options: nosniff`) and the W3C trace context (`traceparent`, a new trace
 * when absent or malformed), starts the request's span, gives the request its logger
 * (`c.var.log()`: the ids and the trace id bound, made on first use, as most requests log nothing
 * but their access line), writes one access-log line, and counts the request by its route template (`/v2/cheeses/:id`, never the
 * raw path; `unmatched` when no route took it) and status.
 *
 * The access line is written by a logger without redaction: its fields are fixed (ids checked
 * above or made here, method, path without its query, status, time), none can hold a secret, and
 * pino's redaction would otherwise inspect every one of them on every request. Lines a request
 * logs through `c.var.log()` keep the redaction.
 */
export function observe(logger: Logger) {
  const accessLog = logger.child({}, { redact: [] });
  return createMiddleware<GatewayEnv>(async (c, next) => {
    const started = performance.now();
    readNodeHeaders(c);
    const { method } = c.req;
    const sent = c.req.header("x-request-id");
    const id = sent && acceptableId.test(sent) ? sent : randomUUID();
    const traced = !UNTRACED.has(c.req.path);
    const { span, context: trace } = traced
      ? startSpan(tracerFor("gateway"), method, SpanKind.SERVER, extractTrace(traceCarrier(c)))
      : { span: undefined, context: undefined };
    const traceId = traceIdOf(trace);
    let requestLogger: Logger | undefined;
    c.set("log", () => {
      requestLogger ??= logger.child({ requestId: id, correlationId: id, ...(traceId ? { traceId } : {}) });
      return requestLogger;
    });
    c.set(
      "request",
      trace ? { requestId: id, correlationId: id, trace } : { requestId: id, correlationId: id },
    );
    try {
      await next();
    } finally {
      // Set on the answer once it is made (whoever made it): set before it too, as Hono's
      // `c.header` would, it cost a header write more per request for the same result.
      // Browsers must take every answer for the type it declares (images included): set here,
      // not by a middleware of its own, whose step of Hono's compose (an async dispatch, an
      // async middleware and their awaits) cost more than the header.
      setAnswerHeader(c, "X-Content-Type-Options", "nosniff");
      setAnswerHeader(c, "X-Request-Id", id);
      const ms = performance.now() - started;
      const route = routeOf(c);
      const { status } = c.res;
      const counted = series(method, route, status);
      counted.requests.inc();
      counted.duration.observe(ms / 1000);
      if (span) {
        span.updateName(counted.spanName);
        if (span.isRecording()) {
          span.setAttributes({
            "http.request.method": method,
            "http.route": route,
            "http.response.status_code": status,
          });
        }
        endSpan(span, status >= 500 ? `answered ${status}` : undefined);
      }
      // pino leaves out a field whose value is undefined: no traceId, no key, as before.
      accessLog.info(
        { requestId: id, correlationId: id, traceId, method, path: c.req.path, status, ms: Math.round(ms) },
        "request",
      );
    }
  });
}

/**
 * The template of the route that answered: the one whose handler ran last. When a middleware for
 * every path answered (401, 429, 413), the route the request was headed for: the first matched
 * one of its own (several may match, as `/cheeses/findByStatus` and `/cheeses/:cheeseId` do;
 * Hono takes them in order). None: `unmatched`.
 */
function routeOf(c: Context<GatewayEnv>): string {
  const routes = matchedRoutes(c);
  const answered = routes[c.req.routeIndex];
  if (answered && !everyPath(answered)) return answered.path;
  return routes.find((route) => !everyPath(route))?.path ?? "unmatched";
}

const everyPath = (route: { method: string; path: string }) =>
  route.method === "ALL" && route.path.endsWith("*");
