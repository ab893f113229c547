import {
  type Address,
  type Cheese,
  type Order,
  type OrderActor,
  type OrderFields,
  type OrderStatus,
  orderingEvents,
} from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";
import {
  conflict,
  type Decider,
  type DomainEvent,
  forbidden,
  notFound,
  validationFailed,
} from "@cheese/service-kit";

// The order aggregate (docs/ordering.md), read in the order an order is placed: its events and
// commands, its pricing, its personal part, its decider, and the integration event each of its
// events publishes.

/**
 * Every event carries the order as it stands after the change, so the outbox relay publishes the
 * integration event from the event alone (`toIntegrationEvent`, below) and the projection stores
 * it as is.
 */
interface OrderChange {
  order: Order;
  /** The customer who placed it, or null for an operator client. */
  customerId: number | null;
  /**
   * A customer's order: its shipping address and notes sealed under the customer's key, `order`
   * carrying them redacted (`redacted`, below). Absent: `order` carries them in clear
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

/**
 * Pricing an order: every line checked against the cheese as the catalogue has it now, prices
 * fixed, the total computed in exact cents. Pure: the cheeses and the time are passed in.
 */

/** Why a line cannot be ordered now, or undefined when it can. */
export function unorderable(cheeseId: number, cheese: Cheese | undefined): string | undefined {
  if (!cheese) return `cheese ${cheeseId} does not exist`;
  if (cheese.status !== "available") return `cheese ${cheeseId} is ${cheese.status}, not available`;
  if (cheese.pricePerKg === undefined) return `cheese ${cheeseId} has no price`;
  return undefined;
}

/** Lines naming a cheese an earlier line names: 422, naming the later line. */
export function checkDistinctLines(fields: OrderFields): void {
  const seen = new Map<number, number>();
  const errors: { field: string; message: string }[] = [];
  fields.items.forEach((line, index) => {
    const first = seen.get(line.cheeseId);
    if (first !== undefined) {
      errors.push({
        field: `items[${index}].cheeseId`,
        message: `cheese ${line.cheeseId} is already ordered on line items[${first}]`,
      });
    } else seen.set(line.cheeseId, index);
  });
  if (errors.length > 0) throw validationFailed("order has duplicate lines", errors);
}

/**
 * The order for `fields`, each line priced from `cheeses` (the catalogue's answer for the line at
 * the same index). Every line that cannot be ordered is reported at once (422).
 */
export function priceOrder(
  fields: OrderFields,
  cheeses: readonly (Cheese | undefined)[],
  at: string,
): Omit<Order, "id"> {
  checkDistinctLines(fields);
  const errors = fields.items.flatMap((line, index) => {
    const problem = unorderable(line.cheeseId, cheeses[index]);
    return problem ? [{ field: `items[${index}].cheeseId`, message: problem }] : [];
  });
  if (errors.length > 0) throw validationFailed("some lines cannot be ordered", errors);
  const items = fields.items.map((line, index) => {
    const cheese = cheeses[index] as Cheese & { pricePerKg: number };
    return {
      cheeseId: line.cheeseId,
      cheeseName: cheese.name,
      quantity: line.quantity,
      pricePerKg: cheese.pricePerKg,
    };
  });
  return {
    items,
    shippingAddress: fields.shippingAddress,
    status: "placed",
    notes: fields.notes,
    total: orderTotal(items),
    shipDate: null,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * The total is Σ quantity × pricePerKg, rounded to cents. Floats would drift
 * (0.1 × 3 ≠ 0.3), so prices become integers of millionths of a dollar (exact for any price
 * written with up to six decimals), lines are summed as integers, and the sum is rounded half up
 * to whole cents once. The largest order (50 lines × 100 × $1,000,000) stays below 2^53.
 */
const MICROS_PER_DOLLAR = 1_000_000;
const MICROS_PER_CENT = 10_000;

export function orderTotal(lines: readonly { quantity: number; pricePerKg: number }[]): number {
  const micros = lines.reduce(
    (sum, line) => sum + line.quantity * Math.round(line.pricePerKg * MICROS_PER_DOLLAR),
    0,
  );
  const cents = Math.floor((micros + MICROS_PER_CENT / 2) / MICROS_PER_CENT);
  return cents / 100;
}

/**
 * A customer's shipping address and notes are personal data: ordering keeps them sealed under the
 * customer's own key (the customer service holds it), and the order in its events carries them
 * redacted. Opened, they are put back; once the customer is erased they cannot be, and the order
 * answers redacted: the street and city read "[erased]", state and zip code are gone, the country
 * stays (it identifies nobody, and the Order schema needs one), the notes are null.
 */
export interface OrderPersonalData {
  shippingAddress: Address;
  notes: string | null;
}

/** An order as stored: redacted, with its sealed part, when a customer placed it. */
export interface StoredOrder {
  order: Order;
  customerId: number | null;
  personal?: string | undefined;
}

const ERASED = "[erased]";

export function personalPart(order: Order): OrderPersonalData {
  return { shippingAddress: order.shippingAddress, notes: order.notes };
}

export function redacted(order: Order): Order {
  return {
    ...order,
    shippingAddress: { street: ERASED, city: ERASED, country: order.shippingAddress.country },
    notes: null,
  };
}

export function revealed(order: Order, personal: OrderPersonalData): Order {
  return { ...order, shippingAddress: personal.shippingAddress, notes: personal.notes };
}

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

/**
 * Every order transition becomes the integration event of the same name, with the order as it
 * now stands and its customer (docs/webhooks.md "Event kinds": order.placed / confirmed / shipped
 * / delivered / cancelled). A customer's address and notes go as the events hold them: redacted in
 * `order`, sealed under the customer's key in `personal`, never opened, so the `EVENTS` stream
 * keeps nothing that erasing the customer would not shred. Who placed it (`ownerId`) stays private.
 */
export function toIntegrationEvent(
  event: RecordedEvent,
): Omit<IntegrationEvent, "id" | "headers"> | undefined {
  const domainEvent = { type: event.type, data: event.data } as OrderEvent;
  if (!domainEvent.data?.order) return undefined;
  const { order, customerId, personal } = domainEvent.data;
  const base = { order, customerId, ...(personal !== undefined ? { personal } : {}) };
  switch (domainEvent.type) {
    case "OrderPlaced":
      return { subject: orderingEvents.orderPlaced.subject, payload: base };
    case "OrderApproved":
      return { subject: orderingEvents.orderApproved.subject, payload: base };
    case "OrderShipped": {
      const { carrier, trackingNumber, estimatedDelivery } = domainEvent.data;
      return {
        subject: orderingEvents.orderShipped.subject,
        payload: { ...base, carrier, trackingNumber, estimatedDelivery },
      };
    }
    case "OrderDelivered":
      return { subject: orderingEvents.orderDelivered.subject, payload: base };
    case "OrderCancelled":
      return {
        subject: orderingEvents.orderCancelled.subject,
        payload: { ...base, reason: domainEvent.data.reason },
      };
    default:
      return undefined;
  }
}
