import { randomUUID } from "node:crypto";
import type { EventMetadata } from "@cheese/event-store";
import type { Headers } from "@cheese/messaging";
import type { Logger } from "./logger.ts";

export const REQUEST_ID_HEADER = "x-request-id";
export const CORRELATION_ID_HEADER = "x-correlation-id";

/** Who asked and why, carried across NATS hops and into event metadata. */
export interface RequestContext {
  requestId: string;
  correlationId: string;
}

export function contextFromHeaders(headers: Headers): RequestContext {
  const requestId = headers[REQUEST_ID_HEADER] ?? randomUUID();
  return { requestId, correlationId: headers[CORRELATION_ID_HEADER] ?? requestId };
}

export function contextHeaders(context: RequestContext): Headers {
  return { [REQUEST_ID_HEADER]: context.requestId, [CORRELATION_ID_HEADER]: context.correlationId };
}

export function contextMetadata(context: RequestContext, causationId?: string): EventMetadata {
  return { requestId: context.requestId, correlationId: context.correlationId, causationId };
}

export function contextLogger(logger: Logger, context: RequestContext): Logger {
  return logger.child({ requestId: context.requestId, correlationId: context.correlationId });
}
