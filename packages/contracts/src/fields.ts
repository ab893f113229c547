// The field schemas the contract modules share. Not exported from the package: each module's own
// schemas are what it offers.
import { z } from "@hono/zod-openapi";

/** A public numeric id: a positive integer below 2^53, `int64` in the OpenAPI document. */
export const int64Id = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).openapi({ format: "int64" });

/** An ISO 8601 timestamp as the API writes it, `date-time` in the OpenAPI document. */
export const dateTime = z.string().openapi({ format: "date-time" });

/**
 * A public numeric id in a path (`/.../{name}`), as the path holds it: text coerced to a positive
 * integer below 2^53, `integer`/`int64` in the OpenAPI document.
 */
export const pathId = (name: string) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .openapi({ param: { name, in: "path" }, type: "integer", format: "int64", minimum: 1 });
