import { defineRpc } from "@cheese/messaging";
import { z } from "zod";
import { Order, OrderFields, OrderStatus } from "../order.ts";

const orderId = z.number().int().positive();

/**
 * Whose orders a caller may see and touch: a customer only its own (`customerId`), an operator
 * (API key or client-credentials client) every order (`customerId: null`). Someone else's order
 * reads as absent (404), never as forbidden, so ids do not leak.
 */
export const OrderViewer = z.object({ customerId: z.number().int().positive().nullable() });
export type OrderViewer = z.infer<typeof OrderViewer>;

/** Who places an order: a customer, or an operator client (`customerId: null`). */
export const OrderOwner = z.object({
  customerId: z.number().int().positive().nullable(),
  /** The gateway's caller id (`cust:7`, `client:ops`), recorded for audit. */
  ownerId: z.string().min(1),
});
export type OrderOwner = z.infer<typeof OrderOwner>;

export const OrderReply = z.object({ order: Order });

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
  /**
   * Checks every line against the catalogue, fixes prices, appends OrderPlaced. With an
   * `idempotencyKey` (already scoped to the caller) a repeat returns the order as first placed
   * instead of placing another, even when the gateway lost the first reply; a repeat whose
   * `fingerprint` differs is 409.
   */
  placeOrder: defineRpc({
    subject: "ordering.order.place",
    request: z.object({
      fields: OrderFields,
      owner: OrderOwner,
      idempotency: z
        .object({ key: z.string().regex(/^[0-9a-f]{64}$/), fingerprint: z.string().min(1) })
        .optional(),
    }),
    response: OrderReply,
  }),
  getOrder: defineRpc({
    subject: "ordering.order.get",
    request: z.object({ orderId, viewer: OrderViewer }),
    response: OrderReply,
  }),
  /** Newest first (createdAt, then id, descending); `after` is the last order of the previous page. */
  listOrders: defineRpc({
    subject: "ordering.order.list",
    request: z.object({
      viewer: OrderViewer,
      limit: z.number().int().min(1).max(100),
      after: z.object({ createdAt: z.string().min(1), id: orderId }).optional(),
      statuses: z.array(OrderStatus).optional(),
    }),
    response: z.object({ items: z.array(Order), hasMore: z.boolean(), total: z.number().int().min(0) }),
  }),
  /** placed or approved → cancelled; cancelled stays cancelled; shipped or delivered → 409. */
  cancelOrder: defineRpc({
    subject: "ordering.order.cancel",
    request: z.object({ orderId, viewer: OrderViewer }),
    response: OrderReply,
  }),
  /** approved → shipped (operator clients only; the gateway checks who calls). */
  shipOrder: defineRpc({
    subject: "ordering.order.ship",
    request: z.object({
      orderId,
      carrier: z.string().min(1),
      trackingNumber: z.string().min(1),
      estimatedDelivery: z.string().min(1),
    }),
    response: OrderReply,
  }),
  /** shipped → delivered (operator clients only). */
  deliverOrder: defineRpc({
    subject: "ordering.order.deliver",
    request: z.object({ orderId }),
    response: OrderReply,
  }),
};
