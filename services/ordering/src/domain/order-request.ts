import { type Decider, DomainError, type DomainEvent } from "@cheese/service-kit";

/** decisions.md "Orders": a repeat within 24 h returns the first response; after that a key is new. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;

/**
 * One stream per idempotency key (`orderrequest-<key>`): the first placement claims an order id
 * for the key; every repeat within the window finds it. The fingerprint of the request body is
 * kept so a repeat with another body is refused. Once the window has passed the key may claim a
 * new order, so a key reused days later is a new request, as at the gateway.
 */
export type OrderRequestEvent = DomainEvent<
  "OrderRequestClaimed",
  { orderId: number; fingerprint: string; claimedAt?: string }
>;

export type OrderRequestCommand = { type: "Claim"; orderId: number; fingerprint: string; now: string };

export type OrderRequestState = { orderId?: number; fingerprint?: string; claimedAt?: string };

export const orderRequestStream = (key: string) => `orderrequest-${key}`;

/** The claim in force at `now`, or undefined when there is none or it has lapsed. */
export function liveClaim(state: OrderRequestState, now: string): OrderRequestState | undefined {
  if (state.orderId === undefined) return undefined;
  // Claims recorded before claimedAt existed never lapse.
  if (state.claimedAt && Date.parse(now) - Date.parse(state.claimedAt) >= IDEMPOTENCY_WINDOW_MS)
    return undefined;
  return state;
}

export const orderRequestDecider: Decider<OrderRequestState, OrderRequestCommand, OrderRequestEvent> = {
  initialState: () => ({}),
  evolve: (_state, event) => ({ ...event.data }),
  decide(command, state) {
    const claim = liveClaim(state, command.now);
    if (!claim) {
      const { orderId, fingerprint, now } = command;
      return [{ type: "OrderRequestClaimed", data: { orderId, fingerprint, claimedAt: now } }];
    }
    if (claim.fingerprint !== command.fingerprint) {
      throw new DomainError(
        409,
        "conflict",
        "this Idempotency-Key was already used with a different request",
      );
    }
    return [];
  },
};
