import { type Decider, DomainError, type DomainEvent } from "@cheese/service-kit";

/**
 * One stream per idempotency key (`orderrequest-<key>`): the first placement claims an order id
 * for the key; every repeat finds it. The fingerprint of the request body is kept so a repeat
 * with another body is refused (decisions.md "Orders").
 */
export type OrderRequestEvent = DomainEvent<"OrderRequestClaimed", { orderId: number; fingerprint: string }>;

export type OrderRequestCommand = { type: "Claim"; orderId: number; fingerprint: string };

export type OrderRequestState = { orderId?: number; fingerprint?: string };

export const orderRequestStream = (key: string) => `orderrequest-${key}`;

export const orderRequestDecider: Decider<OrderRequestState, OrderRequestCommand, OrderRequestEvent> = {
  initialState: () => ({}),
  evolve: (state, event) => (state.orderId === undefined ? { ...event.data } : state),
  decide(command, state) {
    if (state.orderId === undefined) {
      return [
        { type: "OrderRequestClaimed", data: { orderId: command.orderId, fingerprint: command.fingerprint } },
      ];
    }
    if (state.fingerprint !== command.fingerprint) {
      throw new DomainError(
        409,
        "conflict",
        "this Idempotency-Key was already used with a different request",
      );
    }
    return [];
  },
};
