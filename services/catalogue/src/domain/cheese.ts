import type { Cheese } from "@cheese/contracts";
import { type Decider, DomainError, type DomainEvent } from "@cheese/service-kit";

export type CheeseEvent = DomainEvent<"CheeseAdded", { cheese: Cheese }>;

export type CheeseCommand = { type: "AddCheese"; cheese: Cheese };

export type CheeseState = { status: "absent" } | { status: "present"; cheese: Cheese };

export const cheeseStream = (id: number) => `cheese-${id}`;

/** The cheese aggregate. Ids, category and tag ids are resolved before a command is decided. */
export const cheeseDecider: Decider<CheeseState, CheeseCommand, CheeseEvent> = {
  initialState: () => ({ status: "absent" }),
  evolve(state, event) {
    switch (event.type) {
      case "CheeseAdded":
        return { status: "present", cheese: event.data.cheese };
      default:
        return state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "AddCheese":
        if (state.status !== "absent") throw new DomainError(409, "conflict", "cheese already exists");
        return [{ type: "CheeseAdded", data: { cheese: command.cheese } }];
    }
  },
};
