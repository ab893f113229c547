import { randomUUID } from "node:crypto";
import type { EventMetadata } from "@cheese/event-store";
import { DEADLINE_HEADER, type Headers } from "@cheese/messaging";
import type { Logger } from "./logger.ts";
import { extractTrace, injectTrace, type TraceContext, traceIdOf } from "./tracing.ts";

export const REQUEST_ID_HEADER = "x-request-id";
export const CORRELATION_ID_HEADER = "x-correlation-id";

/** Who asked and why, carried across NATS hops and into event metadata. */
export interface RequestContext {
  requestId: string;
  correlationId: string;
  /**
   * The trace the request belongs to (its current span), carried on as `traceparent` in NATS
   * headers and event metadata. Absent: none is carried.
   */
  trace?: TraceContext;
  /**
   * When the caller stops waiting (epoch ms, the request's `x-deadline`): a handler whose work
   * can end early with what it has done (a batch) stops in time to answer. Absent outside a
   * request.
   */
  deadline?: number;
}

export function contextFromHeaders(headers: Headers): RequestContext {
  const requestId = headers[REQUEST_ID_HEADER] ?? randomUUID();
  const deadline = Number(headers[DEADLINE_HEADER]);
  return {
    requestId,
    correlationId: headers[CORRELATION_ID_HEADER] ?? requestId,
    trace: extractTrace(headers),
    ...(Number.isFinite(deadline) && deadline > 0 ? { deadline } : {}),
  };
}

export function contextHeaders(context: RequestContext): Headers {
  const headers = { [REQUEST_ID_HEADER]: context.requestId, [CORRELATION_ID_HEADER]: context.correlationId };
  injectTrace(context.trace, headers);
  return headers;
}

export function contextMetadata(context: RequestContext, causationId?: string): EventMetadata {
  const metadata: Record<string, string> = {
    requestId: context.requestId,
    correlationId: context.correlationId,
  };
  if (causationId !== undefined) metadata.causationId = causationId;
  injectTrace(context.trace, metadata);
  return metadata;
}

export function contextLogger(logger: Logger, context: RequestContext): Logger {
  const traceId = traceIdOf(context.trace);
  return logger.child({
    requestId: context.requestId,
    correlationId: context.correlationId,
    ...(traceId ? { traceId } : {}),
  });
}
