import { z } from "@hono/zod-openapi";

/** Page sizes 1 to 100, default 20, on every cursor-paginated list (docs/api.md "Pagination"). */
export const PAGE_SIZE_DEFAULT = 20;
export const PAGE_SIZE_MAX = 100;

/** The `cursor` and `limit` query parameters every paginated list takes. */
export const pageQuery = {
  cursor: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .openapi({ description: "cursor from a previous response (its nextCursor)" }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(PAGE_SIZE_MAX)
    .default(PAGE_SIZE_DEFAULT)
    .openapi({ type: "integer", minimum: 1, maximum: PAGE_SIZE_MAX, default: PAGE_SIZE_DEFAULT }),
};
