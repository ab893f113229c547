/**
 * The observe middleware (services/gateway/src/middleware/observe.ts) taken apart for the
 * gateway-steps experiment: each part alone in front of the bare route, to see which of its
 * pieces costs what. `parts` picks them: ids (request id read or made, set on the answer),
 * span (trace context read, span started and ended), metrics (route template, counter and
 * histogram), log (the access line).
 */
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
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import { setAnswerHeader } from "../../services/gateway/src/middleware/answer-headers.ts";

const requests = counter({
  name: "steps_requests_total",
  help: "-",
  labelNames: ["method", "route", "status"],
});
const durations = histogram({
  name: "steps_duration_seconds",
  help: "-",
  labelNames: ["method", "route", "status"],
});
const series = seriesOf((method, route, status) => ({
  requests: requests.labels(method, route, status),
  duration: durations.labels(method, route, status),
}));

export function observeParts(logger: Logger, parts: Set<string>) {
  const accessLog = logger.child({}, { redact: [] });
  return createMiddleware(async (c, next) => {
    const started = performance.now();
    let id = "-";
    if (parts.has("ids")) {
      const sent = c.req.header("x-request-id");
      id = sent && /^[\w.:-]{1,128}$/.test(sent) ? sent : randomUUID();
      c.header("X-Request-Id", id);
    }
    const { span, context: trace } = parts.has("span")
      ? startSpan(tracerFor("gateway"), c.req.method, SpanKind.SERVER, extractTrace(c.req.raw.headers))
      : { span: undefined, context: undefined };
    const traceId = traceIdOf(trace);
    await next();
    if (parts.has("ids")) setAnswerHeader(c, "X-Request-Id", id);
    const ms = performance.now() - started;
    const { status } = c.res;
    if (parts.has("metrics")) {
      const route = matchedRoutes(c).at(-1)?.path ?? "unmatched";
      const counted = series(c.req.method, route, status);
      counted.requests.inc();
      counted.duration.observe(ms / 1000);
    }
    if (span) {
      span.updateName(`${c.req.method} route`);
      endSpan(span);
    }
    if (parts.has("log")) {
      accessLog.info(
        {
          requestId: id,
          correlationId: id,
          traceId,
          method: c.req.method,
          path: c.req.path,
          status,
          ms: Math.round(ms),
        },
        "request",
      );
    }
  });
}
