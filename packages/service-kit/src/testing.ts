import { expect } from "vitest";
import type { Decider, DomainEvent } from "./decider.ts";

/**
 * Given events / when command / then events (or then an error), for testing deciders
 * without any I/O.
 */
export function specFor<State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>) {
  return (given: Event[]) => ({
    when: (command: Command) => {
      const state = given.reduce(decider.evolve, decider.initialState());
      const run = () => decider.decide(command, state);
      return {
        thenEmits: (expected: Event[]) => expect(run()).toEqual(expected),
        thenRefuses: (match: Record<string, unknown>) => {
          let thrown: unknown;
          try {
            run();
          } catch (error) {
            thrown = error;
          }
          expect(thrown, "decide should have refused the command").toBeDefined();
          expect(thrown).toMatchObject(match);
        },
      };
    },
  });
}
