import { defineRpc } from "@cheese/messaging";
import { z } from "zod";
import { Address, Order, OrderFields, OrderStatus } from "../order.ts";

const orderId = z.number().int().positive();

/**
 * Who acts on orders, as the gateway authenticated them: a customer (`customerId`) may see and
 * touch only its own orders (someone else's reads as absent, 404, so ids do not leak); an
 * operator (API key) or an operator client (client-credentials token, `kind: "client"`) every
 * order (`customerId: null`). Only operators (keys and clients) ship and deliver.
 */
export const OrderActor = z.object({
  kind: z.enum(["customer", "operator", "client"]),
  customerId: z.number().int().positive().nullable(),
});
export type OrderActor = z.infer<typeof OrderActor>;

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
   * instead of placing another, even when the gateway lost the first reply (marked `replayed`),
   * or the refusal the first request met; a repeat whose `fingerprint` differs is 409.
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
    response: OrderReply.extend({ replayed: z.literal(true).optional() }),
  }),
  /** The gateway answers the order's JSON as the ordering service encoded it (`passThrough`). */
  getOrder: defineRpc({
    subject: "ordering.order.get",
    request: z.object({ orderId, actor: OrderActor }),
    response: OrderReply,
    passThrough: { body: "order", meta: [] },
  }),
  /**
   * GET /store/order/{id}?asOf=: the order as it was at `asOf` (its stream folded up to the last
   * event recorded then, whose time is `at`), for whoever may read the order now; its personal
   * data as it reads today (redacted once the customer is erased). 404 when it did not exist yet.
   */
  getOrderAsOf: defineRpc({
    subject: "ordering.order.get_as_of",
    request: z.object({ orderId, actor: OrderActor, asOf: z.iso.datetime({ offset: true }) }),
    response: OrderReply.extend({ at: z.string() }),
  }),
  /**
   * A customer's data export (GET /customer/{username}/export): every order the customer placed,
   * newest first, with the address and notes as they read now, and the shipping addresses they
   * hold, each once, newest first. The gateway asks it for the customer the customer service
   * has just let the caller export.
   */
  customerOrders: defineRpc({
    subject: "ordering.order.customer_export",
    request: z.object({ customerId: z.number().int().positive() }),
    response: z.object({ orders: z.array(Order), addresses: z.array(Address) }),
  }),
  /**
   * Newest first (createdAt, then id, descending), one page after `cursor` (a `nextCursor` this
   * RPC returned; 400 for anything else).
   */
  listOrders: defineRpc({
    subject: "ordering.order.list",
    request: z.object({
      actor: OrderActor,
      limit: z.number().int().min(1).max(100),
      cursor: z.string().optional(),
      statuses: z.array(OrderStatus).optional(),
    }),
    response: z.object({
      items: z.array(Order),
      nextCursor: z.string().nullable(),
      hasMore: z.boolean(),
      total: z.number().int().min(0),
    }),
    /** The gateway answers the page's JSON as the ordering service encoded it, its headers from `meta`. */
    passThrough: { body: ".", meta: ["total", "nextCursor"] },
  }),
  /** placed or approved → cancelled; cancelled stays cancelled; shipped or delivered → 409. */
  cancelOrder: defineRpc({
    subject: "ordering.order.cancel",
    request: z.object({ orderId, actor: OrderActor }),
    response: OrderReply,
  }),
  /** approved → shipped (operators only: operator keys and clients; 403 for a customer). */
  shipOrder: defineRpc({
    subject: "ordering.order.ship",
    request: z.object({
      orderId,
      actor: OrderActor,
      carrier: z.string().min(1),
      trackingNumber: z.string().min(1),
      estimatedDelivery: z.string().min(1),
    }),
    response: OrderReply,
  }),
  /** shipped → delivered (operators only). */
  deliverOrder: defineRpc({
    subject: "ordering.order.deliver",
    request: z.object({ orderId, actor: OrderActor }),
    response: OrderReply,
  }),
};
