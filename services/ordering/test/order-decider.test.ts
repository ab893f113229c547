import type { Order, OrderStatus } from "@cheese/contracts";
import { specFor } from "@cheese/service-kit/testing";
import { describe, it } from "vitest";
import { type OrderCommand, type OrderEvent, orderDecider } from "../src/domain/order.ts";

const placedAt = "2026-11-22T10:00:00.000Z";
const later = "2026-11-22T11:00:00.000Z";

const order: Order = {
  id: 12,
  items: [{ cheeseId: 7, cheeseName: "Brie", quantity: 2, pricePerKg: 18.5 }],
  shippingAddress: { street: "1 Rue du Lait", city: "Meaux", country: "FR" },
  status: "placed",
  notes: null,
  total: 37,
  shipDate: null,
  createdAt: placedAt,
  updatedAt: placedAt,
};
const customerId = 3;
const as = (status: OrderStatus, extra: Partial<Order> = {}): Order => ({
  ...order,
  ...extra,
  status,
  updatedAt: later,
});

const placed: OrderEvent = { type: "OrderPlaced", data: { order, customerId, ownerId: "cust:3" } };
const approved: OrderEvent = { type: "OrderApproved", data: { order: as("approved"), customerId } };
const shipment = {
  carrier: "La Poste",
  trackingNumber: "LP123",
  estimatedDelivery: "2026-11-25T12:00:00.000Z",
};
const shipped: OrderEvent = {
  type: "OrderShipped",
  data: { order: as("shipped", { shipDate: later }), customerId, ...shipment },
};
const delivered: OrderEvent = {
  type: "OrderDelivered",
  data: { order: as("delivered", { shipDate: later }), customerId },
};
const cancelled: OrderEvent = {
  type: "OrderCancelled",
  data: { order: as("cancelled"), customerId, reason: "cancelled by the customer" },
};

const approve: OrderCommand = { type: "ReviewOrder", verdict: { approve: true }, at: later };
const reject: OrderCommand = {
  type: "ReviewOrder",
  verdict: { approve: false, reason: "cheese 7 is sold, not available" },
  at: later,
};
const operatorClient = { kind: "client" as const, customerId: null };
const ship: OrderCommand = { type: "ShipOrder", by: operatorClient, ...shipment, at: later };
const deliver: OrderCommand = { type: "DeliverOrder", by: operatorClient, at: later };
const cancelByCustomer: OrderCommand = {
  type: "CancelOrder",
  by: { kind: "customer", customerId },
  at: later,
};
const cancelByOperator: OrderCommand = {
  type: "CancelOrder",
  by: { kind: "operator", customerId: null },
  at: later,
};
const cheeseDeleted: OrderCommand = { type: "CancelForDeletedCheese", cheeseId: 7, at: later };

const history: Record<OrderStatus, OrderEvent[]> = {
  placed: [placed],
  approved: [placed, approved],
  shipped: [placed, approved, shipped],
  delivered: [placed, approved, shipped, delivered],
  cancelled: [placed, cancelled],
};

describe("order decider", () => {
  const given = specFor(orderDecider);

  describe("placement", () => {
    it("places a new order as placed", () => {
      given([]).when({ type: "PlaceOrder", order, customerId, ownerId: "cust:3" }).thenEmits([placed]);
    });

    it("refuses to place the same order id twice", () => {
      given([placed])
        .when({ type: "PlaceOrder", order, customerId, ownerId: "cust:3" })
        .thenRefuses({ body: { status: 409, type: "conflict" } });
    });

    it("answers 404 for any other command on an order that does not exist", () => {
      for (const command of [approve, ship, deliver, cancelByOperator, cheeseDeleted]) {
        given([])
          .when(command)
          .thenRefuses({ body: { status: 404, type: "not_found" } });
      }
    });
  });

  describe("asynchronous review", () => {
    it("approves a placed order whose cheeses are still available", () => {
      given([placed]).when(approve).thenEmits([approved]);
    });

    it("cancels a placed order whose cheeses are no longer available, saying why", () => {
      given([placed])
        .when(reject)
        .thenEmits([
          {
            type: "OrderCancelled",
            data: { order: as("cancelled"), customerId, reason: "cheese 7 is sold, not available" },
          },
        ]);
    });

    it("does nothing to an order that is no longer placed (a repeated or racing review)", () => {
      for (const status of ["approved", "shipped", "delivered", "cancelled"] as const) {
        given(history[status]).when(approve).thenEmits([]);
        given(history[status]).when(reject).thenEmits([]);
      }
    });
  });

  describe("fulfilment", () => {
    it("ships an approved order with its shipping details and sets shipDate", () => {
      given(history.approved).when(ship).thenEmits([shipped]);
    });

    it("delivers a shipped order", () => {
      given(history.shipped).when(deliver).thenEmits([delivered]);
    });

    it("refuses to ship anything but an approved order", () => {
      for (const status of ["placed", "shipped", "delivered", "cancelled"] as const) {
        given(history[status])
          .when(ship)
          .thenRefuses({ body: { status: 409, type: "conflict" } });
      }
    });

    it("lets operator keys ship and deliver as operator clients do", () => {
      const operatorKey = { kind: "operator" as const, customerId: null };
      given(history.approved)
        .when({ ...ship, by: operatorKey } as OrderCommand)
        .thenEmits([shipped]);
      given(history.shipped)
        .when({ ...deliver, by: operatorKey } as OrderCommand)
        .thenEmits([delivered]);
    });

    it("refuses a customer shipping or delivering (403, whatever the order, even its own)", () => {
      const customer = { kind: "customer" as const, customerId };
      for (const events of [[], history.approved, history.shipped]) {
        given(events)
          .when({ ...ship, by: customer } as OrderCommand)
          .thenRefuses({ body: { status: 403, type: "forbidden" } });
        given(events)
          .when({ ...deliver, by: customer } as OrderCommand)
          .thenRefuses({ body: { status: 403, type: "forbidden" } });
      }
    });

    it("refuses to deliver anything but a shipped order", () => {
      for (const status of ["placed", "approved", "delivered", "cancelled"] as const) {
        given(history[status])
          .when(deliver)
          .thenRefuses({ body: { status: 409, type: "conflict" } });
      }
    });
  });

  describe("cancellation", () => {
    it("cancels a placed or an approved order", () => {
      given(history.placed).when(cancelByCustomer).thenEmits([cancelled]);
      given(history.approved).when(cancelByCustomer).thenEmits([cancelled]);
      given(history.approved)
        .when(cancelByOperator)
        .thenEmits([
          {
            type: "OrderCancelled",
            data: { order: as("cancelled"), customerId, reason: "cancelled by an operator" },
          },
        ]);
    });

    it("accepts cancelling a cancelled order again, changing nothing", () => {
      given(history.cancelled).when(cancelByCustomer).thenEmits([]);
    });

    it("refuses to cancel a shipped or delivered order with 409", () => {
      given(history.shipped)
        .when(cancelByCustomer)
        .thenRefuses({ body: { status: 409, type: "conflict" } });
      given(history.delivered)
        .when(cancelByOperator)
        .thenRefuses({ body: { status: 409, type: "conflict" } });
    });

    it("answers 404 to a customer cancelling someone else's order, whatever its status", () => {
      for (const status of ["placed", "shipped", "cancelled"] as const) {
        given(history[status])
          .when({ type: "CancelOrder", by: { kind: "customer", customerId: 99 }, at: later })
          .thenRefuses({ body: { status: 404, type: "not_found" } });
      }
    });
  });

  describe("cheese deletion", () => {
    it("cancels a placed order of the deleted cheese", () => {
      given(history.placed)
        .when(cheeseDeleted)
        .thenEmits([
          {
            type: "OrderCancelled",
            data: { order: as("cancelled"), customerId, reason: "cheese 7 was deleted" },
          },
        ]);
    });

    it("leaves orders of other cheeses, and orders past placed, alone", () => {
      given(history.placed)
        .when({ ...cheeseDeleted, cheeseId: 8 })
        .thenEmits([]);
      for (const status of ["approved", "shipped", "delivered", "cancelled"] as const) {
        given(history[status]).when(cheeseDeleted).thenEmits([]);
      }
    });
  });
});
