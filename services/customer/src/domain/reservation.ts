import { type Decider, DomainError, type DomainEvent } from "@cheese/service-kit";

/**
 * Uniqueness of usernames and emails on the write side: one stream per normalised value,
 * appended with the expected revision, so of racing registrations exactly one holds the value.
 * A deleted customer releases its streams, and the value can be registered again.
 *
 * Email streams are named by a keyed hash of the normalised email (see personal-data/vault.ts),
 * so no stream name or event holds an email.
 */
export type ReservationEvent =
  | DomainEvent<"Reserved", { customerId: number }>
  | DomainEvent<"Released", { customerId: number }>;

export type ReservationCommand =
  | { type: "Reserve"; customerId: number }
  | { type: "Release"; customerId: number };

export type ReservationState = { holder: number | undefined };

export type ReservedValue = "username" | "email";

export const usernameStream = (username: string) => `customername-${username.toLowerCase()}`;
export const emailStream = (emailKey: string) => `customeremail-${emailKey}`;

export const reservationDecider = (
  what: ReservedValue,
): Decider<ReservationState, ReservationCommand, ReservationEvent> => ({
  initialState: () => ({ holder: undefined }),
  evolve(state, event) {
    switch (event.type) {
      case "Reserved":
        return { holder: event.data.customerId };
      case "Released":
        return state.holder === event.data.customerId ? { holder: undefined } : state;
      default:
        return state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "Reserve":
        if (state.holder === command.customerId) return [];
        if (state.holder !== undefined) throw new DomainError(409, "conflict", `${what} already exists`);
        return [{ type: "Reserved", data: { customerId: command.customerId } }];
      case "Release":
        return state.holder === command.customerId
          ? [{ type: "Released", data: { customerId: command.customerId } }]
          : [];
    }
  },
});
