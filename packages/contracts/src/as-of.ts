import { z } from "@hono/zod-openapi";

/**
 * `?asOf=<date-time>`: read an aggregate as it was at that moment (docs/api.md "Reads as of a
 * moment"). A malformed time, or one later than now by the gateway's clock, is 400 naming asOf,
 * like any malformed query value.
 */
export const asOfQuery = (clock: { now(): Date }) =>
  z.object({
    asOf: z.iso
      .datetime({ offset: true, message: "must be an RFC 3339 date-time with a time zone" })
      .refine((value) => Date.parse(value) <= clock.now().getTime(), { message: "must not be in the future" })
      .optional()
      .openapi({
        param: { name: "asOf", in: "query" },
        description:
          "answer as it was at this moment (RFC 3339, with a time zone; not in the future): its events up to then, folded",
        example: "2026-03-02T12:00:00.000Z",
      }),
  });

/** The header of an answer as of a moment: when the last event folded into it was recorded. */
export const asOfHeader = {
  "X-Cheese-As-Of": {
    description: "with asOf only: when the last event folded into the answer was recorded",
    schema: { type: "string" as const, format: "date-time" },
  },
};
