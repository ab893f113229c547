import { ErrorBody, ValidationErrorBody } from "@cheese/contracts";
import type { z } from "@hono/zod-openapi";

/** JSON content of `schema`, for a request body or a response. */
export const json = <S extends z.ZodType>(schema: S) => ({ "application/json": { schema } });

/** A required JSON request body. */
export const jsonBody = <S extends z.ZodType>(schema: S) => ({ required: true, content: json(schema) });

/** A response with a JSON body. */
export const jsonResponse = <S extends z.ZodType>(description: string, schema: S) => ({
  description,
  content: json(schema),
});

/** OpenAPI response entries for the API's error bodies. */
export const errorResponse = (description: string) => jsonResponse(description, ErrorBody);

export const validationErrorResponse = jsonResponse("request body failed validation", ValidationErrorBody);

/** What an access rule answers: 401 without valid credentials, 403 (`forbidden`) without the right ones. */
export const credentialResponses = (forbidden: string) => ({
  401: errorResponse("missing or invalid credentials; see WWW-Authenticate"),
  403: errorResponse(forbidden),
});

/** Responses every operation can give besides its own. */
export const commonResponses = {
  400: errorResponse("malformed path or query parameter"),
  429: errorResponse("rate limit exceeded; see Retry-After"),
  503: errorResponse("a service did not answer in time; see Retry-After"),
};
