import { type Decider, DomainError, type DomainEvent } from "@cheese/service-kit";

/**
 * Uniqueness of a cheese name within its category, enforced on the write side: one stream per
 * (category, lower-cased name). Appending to it with the expected revision serialises racing
 * creates; exactly one holds the name.
 */
export type ReservationEvent =
  | DomainEvent<"NameReserved", { cheeseId: number }>
  | DomainEvent<"NameReleased", { cheeseId: number }>;

export type ReservationCommand =
  /** `replacing`: a holder known to be deleted, whose release was lost (say, to a crash). */
  { type: "Reserve"; cheeseId: number; replacing?: number } | { type: "Release"; cheeseId: number };

export type ReservationState = { holder: number | undefined };

/** Cheeses without a category form their own group, keyed `none`. */
export function nameReservationStream(categoryId: number | undefined, name: string): string {
  return `cheesename-${categoryId ?? "none"}:${name.trim().toLowerCase()}`;
}

export const nameReservationDecider: Decider<ReservationState, ReservationCommand, ReservationEvent> = {
  initialState: () => ({ holder: undefined }),
  evolve(state, event) {
    switch (event.type) {
      case "NameReserved":
        return { holder: event.data.cheeseId };
      case "NameReleased":
        return state.holder === event.data.cheeseId ? { holder: undefined } : state;
      default:
        return state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "Reserve":
        if (state.holder === command.cheeseId) return [];
        if (state.holder !== undefined && state.holder !== command.replacing) {
          throw new DomainError(409, "conflict", "a cheese with this name already exists in the category");
        }
        return [{ type: "NameReserved", data: { cheeseId: command.cheeseId } }];
      case "Release":
        return state.holder === command.cheeseId
          ? [{ type: "NameReleased", data: { cheeseId: command.cheeseId } }]
          : [];
    }
  },
};
