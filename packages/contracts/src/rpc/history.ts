import { defineRpc } from "@cheese/messaging";
import { z } from "zod";
import { CheeseHistory, CustomerHistory, OrderHistory } from "../history.ts";
import { OrderActor } from "./ordering.ts";

const page = {
  /** Opaque cursor from a previous page's nextCursor. */
  cursor: z.string().optional(),
  limit: z.number().int().min(1).max(100),
};

/**
 * The history of one aggregate, served by the service that owns its stream: its events oldest
 * first as public `{type, at, data}` entries (see `history.ts`).
 */
export const historyRpc = {
  /** Any caller allowed to read cheeses; a deleted cheese's history ends with cheese.deleted. */
  cheese: defineRpc({
    subject: "catalogue.cheese.history",
    request: z.object({ cheeseId: z.number().int().positive(), ...page }),
    response: CheeseHistory,
  }),
  /** The order's customer or an operator; anyone else gets 404, as for the order itself. */
  order: defineRpc({
    subject: "ordering.order.history",
    request: z.object({ orderId: z.number().int().positive(), actor: OrderActor, ...page }),
    response: OrderHistory,
  }),
  /** Only the customer themself (`asCustomer` is their id): their own personal data included. */
  customer: defineRpc({
    subject: "customer.customer.history",
    request: z.object({ username: z.string(), asCustomer: z.number().int().positive(), ...page }),
    response: CustomerHistory,
  }),
};
