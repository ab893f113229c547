import { z } from "@hono/zod-openapi";
import { dateTime } from "./fields.ts";

/** How long an operator's console session lasts (POST /v2/operator/sessions). */
export const OPERATOR_SESSION_TTL_SECONDS = 8 * 3600;

/** A session in force: whose it is and until when. */
export const OperatorSession = z
  .object({
    operatorId: z.string().openapi({
      description: "the operator key it was opened with, as logs and rate limits name it (op:<hash prefix>)",
    }),
    expiresAt: dateTime.openapi({ description: "8 hours after it was opened" }),
  })
  .openapi("OperatorSession");
export type OperatorSession = z.infer<typeof OperatorSession>;

/** A session just opened, with its token. */
export const OperatorSessionOpened = OperatorSession.extend({
  token: z.string().openapi({
    description: "JWT (EdDSA), sent as a bearer credential to GET and DELETE /operator/session only",
  }),
}).openapi("OperatorSessionOpened");
