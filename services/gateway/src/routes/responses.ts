import { ErrorBody, ValidationErrorBody } from "@cheese/contracts";

/** OpenAPI response entries for the API's error bodies. */
export const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorBody } },
});

export const validationErrorResponse = {
  description: "request body failed validation",
  content: { "application/json": { schema: ValidationErrorBody } },
};

/** Responses every operation can give besides its own. */
export const commonResponses = {
  400: errorResponse("malformed path or query parameter"),
  429: errorResponse("rate limit exceeded; see Retry-After"),
  503: errorResponse("a service did not answer in time; see Retry-After"),
};
