import { z } from "@hono/zod-openapi";
import { dateTime } from "./fields.ts";
import { pageQuery } from "./paging.ts";

/** A durable consumer's name: one NATS subject token. */
export const consumerName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_-]+$/)
  .openapi({ example: "ordering-cheese-deleted" });

/**
 * An integration event a service's consumer kept failing to handle for DEAD_LETTER_AFTER
 * (docs/operations.md "Dead letters"); the event as published, with the last failure.
 */
export const DeadLetter = z
  .object({
    id: z.string().openapi({ description: "the dead letter's id; ids grow with time", example: "17" }),
    consumer: consumerName.openapi({
      description: "the durable consumer that failed it; a replay goes to it only",
    }),
    event: z.object({
      id: z.string(),
      subject: z.string().openapi({ example: "events.catalogue.cheese.deleted" }),
      payload: z.unknown().openapi({ description: "the event's JSON body, as published" }),
      headers: z.record(z.string(), z.string()),
      publishedAt: dateTime,
    }),
    error: z.string().openapi({ description: "the last failure (at most 1,000 characters)" }),
    deliveries: z
      .number()
      .int()
      .min(1)
      .openapi({ description: "deliveries made before it was dead-lettered" }),
    firstFailedAt: dateTime,
    deadLetteredAt: dateTime,
  })
  .openapi("DeadLetter");
export type DeadLetter = z.infer<typeof DeadLetter>;

export const DeadLetterList = z
  .object({
    items: z.array(DeadLetter).openapi({ description: "oldest first" }),
    nextCursor: z.string().nullable(),
    hasMore: z.boolean(),
  })
  .openapi("DeadLetterList");

export const DeadLetterListQuery = z.object({
  ...pageQuery,
  cursor: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/)
    .optional()
    .openapi({ description: "cursor from a previous response (its nextCursor)" }),
  consumer: consumerName.optional().openapi({ description: "only this consumer's dead letters" }),
});

export const DeadLetterIdParam = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/)
    .openapi({ param: { name: "id", in: "path" }, example: "17" }),
});

export const DeadLetterReplayed = z
  .object({ id: z.string(), consumer: consumerName })
  .openapi("DeadLetterReplayed");
