import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/testing.ts";

describe("the manual clock", () => {
  it("fires timers in the order they fall due, each at its own time, and not before", async () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const fired: [string, string][] = [];
    const note = (name: string) => () => fired.push([name, clock.now().toISOString()]);
    clock.setTimeout(note("late"), 3000);
    clock.setTimeout(note("early"), 1000);
    const cancelled = clock.setTimeout(note("cancelled"), 2000);
    cancelled.cancel();
    await clock.advance(999);
    expect(fired).toEqual([]);
    await clock.advance(5000);
    expect(fired).toEqual([
      ["early", "2026-01-01T00:00:01.000Z"],
      ["late", "2026-01-01T00:00:03.000Z"],
    ]);
    expect(clock.now().toISOString()).toBe("2026-01-01T00:00:05.999Z");
  });

  it("repeats an interval until it is cancelled", async () => {
    const clock = new ManualClock();
    let ticks = 0;
    const interval = clock.setInterval(() => ticks++, 100);
    await clock.advance(350);
    expect(ticks).toBe(3);
    interval.cancel();
    await clock.advance(1000);
    expect(ticks).toBe(3);
  });
});
