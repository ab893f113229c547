import type { Order, OrderActor, OrderStatus } from "@cheese/contracts";
import { conflict, type Decider, type DomainEvent, forbidden, notFound } from "@cheese/service-kit";

/**
 * The order aggregate (docs/ordering.md). Every event carries the order as it stands after the
 * change, so the outbox relay can publish the integration event from the event alone and the
 * projection stores it as is.
 */
interface OrderChange {
  order: Order;
  /** The customer who placed it, or null for an operator client. */
  customerId: number | null;
  /**
   * A customer's order: its shipping address and notes sealed under the customer's key, `order`
   * carrying them redacted (domain/personal-data.ts). Absent: `order` carries them in clear
   * (operator orders, and orders placed before addresses were sealed).
   */
  personal?: string;
}

export type OrderEvent =
  | DomainEvent<"OrderPlaced", OrderChange & { ownerId: string }>
  | DomainEvent<"OrderApproved", OrderChange>
  | DomainEvent<
      "OrderShipped",
      OrderChange & { carrier: string; trackingNumber: string; estimatedDelivery: string }
    >
  | DomainEvent<"OrderDelivered", OrderChange>
  | DomainEvent<"OrderCancelled", OrderChange & { reason: string }>;

/**
 * Who asks: a customer may only touch its own orders; `customerId: null` is an operator (API
 * key, also signed in at the console) or an operator client (client-credentials token); only
 * those two ship and deliver.
 */
export type Actor = OrderActor;

export type OrderCommand =
  | { type: "PlaceOrder"; order: Order; customerId: number | null; ownerId: string; personal?: string }
  /** The process manager's verdict after re-checking the catalogue. */
  | { type: "ReviewOrder"; verdict: { approve: true } | { approve: false; reason: string }; at: string }
  | {
      type: "ShipOrder";
      by: Actor;
      carrier: string;
      trackingNumber: string;
      estimatedDelivery: string;
      at: string;
    }
  | { type: "DeliverOrder"; by: Actor; at: string }
  | { type: "CancelOrder"; by: Actor; at: string }
  /** A deleted cheese cancels its placed orders; other statuses are left alone. */
  | { type: "CancelForDeletedCheese"; cheeseId: number; at: string };

export type OrderState =
  | { status: "absent" }
  | { status: OrderStatus; order: Order; customerId: number | null; personal?: string };

export const orderStream = (id: number) => `order-${id}`;

const moved = (order: Order, status: OrderStatus, at: string, extra: Partial<Order> = {}): Order => ({
  ...order,
  ...extra,
  status,
  updatedAt: at,
});

const cannotBe = (order: Order, wanted: string) =>
  conflict(`order ${order.id} is ${order.status} and cannot be ${wanted}`);

const orderNotFound = () => notFound("order not found");

/**
 * Fulfilment is operators' work, an operator key's (API or console) or an operator client's:
 * a customer is refused whatever the order.
 */
function requireOperator(actor: Actor): void {
  if (actor.kind !== "operator" && actor.kind !== "client") {
    throw forbidden("only operators (operator API keys, operator clients) may ship or deliver orders");
  }
}

export const orderDecider: Decider<OrderState, OrderCommand, OrderEvent> = {
  initialState: () => ({ status: "absent" }),
  evolve(_state, event) {
    const { order, customerId, personal } = event.data;
    return { status: order.status, order, customerId, ...(personal !== undefined ? { personal } : {}) };
  },
  decide(command, state) {
    if (command.type === "PlaceOrder") {
      if (state.status !== "absent") throw conflict("order already exists");
      const { order, customerId, ownerId, personal } = command;
      const sealed = personal !== undefined ? { personal } : {};
      return [
        {
          type: "OrderPlaced",
          data: { order: { ...order, status: "placed" }, customerId, ownerId, ...sealed },
        },
      ];
    }
    if (command.type === "ShipOrder" || command.type === "DeliverOrder") requireOperator(command.by);
    if (state.status === "absent") throw orderNotFound();
    const { order } = state;
    // Every event carries the order as it stands, its customer, and the sealed part, if any.
    const of = (changed: Order) => ({
      order: changed,
      customerId: state.customerId,
      ...(state.personal !== undefined ? { personal: state.personal } : {}),
    });
    switch (command.type) {
      case "ReviewOrder": {
        // Another replica, a cancellation or a cheese deletion got there first: nothing to do.
        if (state.status !== "placed") return [];
        const { verdict, at } = command;
        if (verdict.approve) {
          return [{ type: "OrderApproved", data: of(moved(order, "approved", at)) }];
        }
        return [
          {
            type: "OrderCancelled",
            data: { ...of(moved(order, "cancelled", at)), reason: verdict.reason },
          },
        ];
      }
      case "ShipOrder": {
        if (state.status !== "approved") throw cannotBe(order, "shipped");
        const { carrier, trackingNumber, estimatedDelivery, at } = command;
        return [
          {
            type: "OrderShipped",
            data: {
              ...of(moved(order, "shipped", at, { shipDate: at })),
              carrier,
              trackingNumber,
              estimatedDelivery,
            },
          },
        ];
      }
      case "DeliverOrder":
        if (state.status !== "shipped") throw cannotBe(order, "delivered");
        return [{ type: "OrderDelivered", data: of(moved(order, "delivered", command.at)) }];
      case "CancelOrder": {
        if (!visibleTo(command.by, state.customerId)) throw orderNotFound();
        if (state.status === "cancelled") return [];
        if (state.status === "shipped" || state.status === "delivered") throw cannotBe(order, "cancelled");
        const reason =
          command.by.customerId === null ? "cancelled by an operator" : "cancelled by the customer";
        return [
          {
            type: "OrderCancelled",
            data: { ...of(moved(order, "cancelled", command.at)), reason },
          },
        ];
      }
      case "CancelForDeletedCheese": {
        const hasCheese = order.items.some((item) => item.cheeseId === command.cheeseId);
        if (state.status !== "placed" || !hasCheese) return [];
        const reason = `cheese ${command.cheeseId} was deleted`;
        return [
          {
            type: "OrderCancelled",
            data: { ...of(moved(order, "cancelled", command.at)), reason },
          },
        ];
      }
    }
  },
};

/** Whether `actor` may see the order: customers their own, operators all. */
export function visibleTo(actor: Actor, customerId: number | null): boolean {
  return actor.customerId === null || actor.customerId === customerId;
}
