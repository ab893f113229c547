import { describe, expect, it } from "vitest";
import { BUSY_PAUSE_MS, untilNotBusy } from "../src/busy-retry.js";

/** A refusal as better-sqlite3 throws it. */
const refusal = (code: string) => Object.assign(new Error("database is locked"), { code });

/** A clock that moves only as the tries take time and pause. */
function fakeClock(timeoutMs: number) {
  let now = 0;
  const pauses: number[] = [];
  return {
    pauses,
    now: () => now,
    spend: (ms: number) => {
      now += ms;
    },
    clock: {
      timeoutMs,
      now: () => now,
      pause: (ms: number) => {
        pauses.push(ms);
        now += ms;
      },
    },
  };
}

describe("the SQLite writer's wait for the write lock (a group refused SQLITE_BUSY)", () => {
  it("tries a group SQLite refused sooner than its busy timeout again, each try told what is left", () => {
    const time = fakeClock(1_000);
    const told: number[] = [];
    const result = untilNotBusy((leftMs) => {
      told.push(leftMs);
      time.spend(100); // SQLite refused after 100 ms of its own wait
      if (told.length < 3) throw refusal(told.length === 1 ? "SQLITE_BUSY" : "SQLITE_BUSY_RECOVERY");
      return "committed";
    }, time.clock);
    expect(result).toBe("committed");
    expect(time.pauses).toEqual([BUSY_PAUSE_MS, BUSY_PAUSE_MS]);
    expect(told).toEqual([1_000, 1_000 - 100 - BUSY_PAUSE_MS, 1_000 - 2 * (100 + BUSY_PAUSE_MS)]);
  });

  it("gives the refusal to the caller once the busy timeout has passed", () => {
    const time = fakeClock(1_000);
    let tries = 0;
    expect(() =>
      untilNotBusy((leftMs) => {
        tries++;
        time.spend(Math.min(300, leftMs)); // SQLite's own wait, at most what it was told is left
        throw refusal("SQLITE_BUSY");
      }, time.clock),
    ).toThrow(expect.objectContaining({ code: "SQLITE_BUSY" }));
    // Tries at 0, 310, 620 and 930 ms, the last one told 70 ms are left: refused at the timeout.
    expect(tries).toBe(4);
    expect(time.now()).toBe(1_000);
  });

  it("tries nothing again that failed otherwise", () => {
    const time = fakeClock(1_000);
    let tries = 0;
    expect(() =>
      untilNotBusy(() => {
        tries++;
        throw refusal("SQLITE_FULL");
      }, time.clock),
    ).toThrow(expect.objectContaining({ code: "SQLITE_FULL" }));
    expect(tries).toBe(1);
  });
});
