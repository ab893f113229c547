import { z } from "@hono/zod-openapi";

/**
 * The `Idempotency-Key` header of the writes that take one (`POST /cheeses`, `POST /store/order`;
 * docs/api.md "Idempotency-Key"). The gateway's `idempotency` middleware checks and scopes it.
 */
export const IdempotencyKeyHeaders = z.object({
  "Idempotency-Key": z.string().optional().openapi({
    description:
      "a repeat with the same key from the same caller within 24 h returns the first response and does nothing else; the same key with another body is 409; 1 to 255 visible ASCII characters",
  }),
});
