import { expect } from "vitest";
import type { Clock, Timer } from "./clock.ts";
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

interface PendingTimer {
  due: number;
  callback: () => void;
  everyMs?: number;
}

/**
 * A clock that moves only when the test says so. Timers fire inside `advance`, in the order
 * they fall due, each at its own time; what they start runs on afterwards (poll for its effect
 * with `expect.poll`).
 */
export class ManualClock implements Clock {
  private time: number;
  private readonly timers = new Set<PendingTimer>();

  constructor(start: Date | string = new Date()) {
    this.time = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.time);
  }

  setTimeout(callback: () => void, ms: number): Timer {
    return this.add({ due: this.time + Math.max(0, ms), callback });
  }

  setInterval(callback: () => void, ms: number): Timer {
    const everyMs = Math.max(1, ms);
    return this.add({ due: this.time + everyMs, callback, everyMs });
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      const next = [...this.timers].filter((t) => t.due <= until).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.time = Math.max(this.time, next.due);
      if (next.everyMs) next.due += next.everyMs;
      else this.timers.delete(next);
      next.callback();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.time = until;
    await new Promise((resolve) => setImmediate(resolve));
  }

  private add(timer: PendingTimer): Timer {
    this.timers.add(timer);
    return { cancel: () => this.timers.delete(timer) };
  }
}
