import { errorTypeFor, type FieldError, fieldErrors } from "@cheese/contracts";
import { RemoteError } from "@cheese/messaging";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";
import type { GatewayEnv } from "./env.ts";

/** Seconds a client should wait before retrying when a service is unavailable. */
const RETRY_AFTER_SECONDS = "2";

export function errorResponse(
  c: Context<GatewayEnv>,
  status: number,
  message: string,
  options: { type?: string; errors?: FieldError[] } = {},
): Response {
  const body: Record<string, unknown> = { code: status, type: options.type ?? errorTypeFor(status), message };
  if (status === 422) body.errors = options.errors ?? [];
  if (status === 503) c.header("Retry-After", RETRY_AFTER_SECONDS);
  return c.json(body, status as ContentfulStatusCode);
}

/** A refusal with the API's error body, to throw from anywhere a request is handled. */
export function refusal(status: number, message: string, errors?: FieldError[]): RemoteError {
  return new RemoteError({ status, type: errorTypeFor(status), message, ...(errors ? { errors } : {}) });
}

/**
 * Malformed path, query or header values are 400 (docs/api.md "Errors"); a body that fails validation or
 * is not JSON is 422 naming the fields.
 */
export function validationFailure(c: Context<GatewayEnv>, target: string, error: z.ZodError): Response {
  const errors = fieldErrors(error.issues);
  if (target === "json" || target === "form") {
    return errorResponse(c, 422, "request body failed validation", { errors });
  }
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
  return errorResponse(c, 400, `invalid ${target === "param" ? "path" : target} parameter: ${detail}`);
}

/** Maps anything thrown by a route to the API's error body. Never a 5xx for a client mistake. */
export function handleError(error: Error, c: Context<GatewayEnv>): Response {
  if (error instanceof RemoteError) {
    const { status, type, message, errors } = error.body;
    if (status >= 500 && status !== 503) c.get("log")?.().error({ err: error }, "service failed");
    return errorResponse(c, status, message, { type, errors });
  }
  if (error instanceof HTTPException) {
    if (error.status === 400 && /json/i.test(error.message)) {
      return errorResponse(c, 422, "request body is not valid JSON", {
        errors: [{ field: "(body)", message: "malformed JSON" }],
      });
    }
    if (error.status === 415) {
      return errorResponse(c, 422, "request body must be JSON sent with Content-Type: application/json", {
        errors: [{ field: "(body)", message: "expected application/json" }],
      });
    }
    return errorResponse(c, error.status, error.message || "request refused");
  }
  if ((error as NodeJS.ErrnoException).code === "ECONNRESET") {
    // The client went away (or its body could not be parsed) before the body was read in full;
    // nobody is left to read this answer, and it is no fault of ours.
    c.get("log")?.().info({ reason: error.message }, "request body cut off");
    return errorResponse(c, 400, "the request body was cut off");
  }
  c.get("log")?.().error({ err: error }, "unhandled error");
  return errorResponse(c, 500, "internal error");
}
