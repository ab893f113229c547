import { defineRpc } from "@cheese/messaging";
import { z } from "zod";

export const orderingRpc = {
  /**
   * Asked by the catalogue before deleting a cheese: orders `approved` or `shipped` for it make
   * the delete a 409. (Placed orders are cancelled by ordering when it sees cheese.deleted.)
   */
  activeOrdersForCheese: defineRpc({
    subject: "ordering.cheese.active_orders",
    request: z.object({ cheeseId: z.number().int().positive() }),
    response: z.object({ activeOrders: z.number().int().min(0) }),
  }),
};
