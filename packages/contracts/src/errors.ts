import { z } from "@hono/zod-openapi";

/** The closed list of `type` values (docs/api.md "Errors"). */
export const errorTypes = [
  "bad_request",
  "unauthorized",
  "forbidden",
  "not_found",
  "conflict",
  "precondition_failed",
  "payload_too_large",
  "unsupported_media_type",
  "validation_error",
  "rate_limited",
  "internal_error",
  "service_unavailable",
] as const;
export type ErrorType = (typeof errorTypes)[number];

export const ErrorBody = z
  .object({
    code: z.number().int().openapi({ format: "int32", description: "equals the HTTP status" }),
    type: z.enum(errorTypes).optional(),
    message: z.string(),
  })
  .openapi("Error");
export type ErrorBody = z.infer<typeof ErrorBody>;

export const FieldError = z.object({ field: z.string(), message: z.string() });
export type FieldError = z.infer<typeof FieldError>;

export const ValidationErrorBody = z
  .object({
    code: z.number().int().openapi({ format: "int32" }),
    type: z.string(),
    message: z.string(),
    errors: z.array(FieldError),
  })
  .openapi("ValidationError");
export type ValidationErrorBody = z.infer<typeof ValidationErrorBody>;

/** The type each status carries by default. */
export function errorTypeFor(status: number): ErrorType {
  const byStatus: Record<number, ErrorType> = {
    400: "bad_request",
    // The request was not received in full in time: the client's doing, as any bad request.
    408: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    // A header section over the limit: a size limit, as 413's.
    431: "payload_too_large",
    503: "service_unavailable",
  };
  return byStatus[status] ?? "internal_error";
}

/** The most field errors one answer lists; the rest are counted in one last entry. */
export const MAX_FIELD_ERRORS = 20;

/**
 * Turns zod issues into `{field, message}` with the paths docs/api.md "Errors" names: `name`,
 * `shippingAddress.country`, `items[0].quantity`.
 */
export function fieldErrors(issues: readonly z.core.$ZodIssue[]): FieldError[] {
  const all = issues.flatMap((issue) => {
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        field: fieldPath([...issue.path, key]),
        message: "unknown field",
      }));
    }
    return [{ field: fieldPath(issue.path) || "(body)", message: issue.message }];
  });
  if (all.length <= MAX_FIELD_ERRORS) return all;
  // A body of 90,000 unknown fields must not get a 4 MB answer listing each.
  const more = all.length - MAX_FIELD_ERRORS;
  return [
    ...all.slice(0, MAX_FIELD_ERRORS),
    {
      field: "(body)",
      message: `${more} more error${more === 1 ? "" : "s"} not listed (${all.length} in all)`,
    },
  ];
}

export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}
