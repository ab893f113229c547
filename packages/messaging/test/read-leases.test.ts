import { describe, expect, it } from "vitest";
import {
  decodeLeaseRecord,
  encodeLeaseRecord,
  LEASE_COUNTED_BY_ANNOUNCER_MS,
  LEASE_MS,
  LeaseHolder,
  LeaseTable,
  type Timers,
} from "../src/read-leases.ts";

/** A clock and timers the test moves by hand. */
function manualTime() {
  let now = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  let next = 0;
  const timers: Timers = {
    set: (fn, ms) => {
      due.set(++next, { at: now + ms, fn });
      return next;
    },
    clear: (handle) => {
      due.delete(handle as number);
    },
  };
  return {
    now: () => now,
    timers,
    advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const first = [...due.entries()].sort((a, b) => a[1].at - b[1].at)[0];
        if (!first || first[1].at > until) break;
        due.delete(first[0]);
        now = first[1].at;
        first[1].fn();
      }
      now = until;
    },
  };
}

/** Whether the promise has settled, after the microtasks queued so far. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("a lease holder", () => {
  it("answers under a grant only once its follower applied it, for a lease counted from before it asked", () => {
    const time = manualTime();
    const holder = new LeaseHolder("g1", time.now);
    const grant = holder.ask();
    expect(holder.valid).toBe(false);
    time.advance(100);
    expect(holder.valid).toBe(false); // stored, not yet applied by its follower
    holder.applied("grant" in grant ? grant.grant : -1);
    expect(holder.valid).toBe(true);
    time.advance(LEASE_MS - 101);
    expect(holder.valid).toBe(true);
    time.advance(1);
    expect(holder.valid).toBe(false); // counted from the ask, not from when it was applied
  });

  it("stops answering at once when it ends, whatever grant it held", () => {
    const time = manualTime();
    const holder = new LeaseHolder("g1", time.now);
    const grant = holder.ask();
    holder.applied("grant" in grant ? grant.grant : -1);
    holder.end();
    expect(holder.valid).toBe(false);
    const later = holder.ask();
    holder.applied("grant" in later ? later.grant : -1);
    expect(holder.valid).toBe(false);
  });

  it("reads back the records it writes, and nothing else", () => {
    expect(decodeLeaseRecord(encodeLeaseRecord({ holder: "abc", grant: 7 }))).toEqual({ holder: "abc", grant: 7 });
    expect(decodeLeaseRecord(encodeLeaseRecord({ holder: "abc", released: true }))).toEqual({
      holder: "abc",
      released: true,
    });
    expect(decodeLeaseRecord("abc")).toBeUndefined();
    expect(decodeLeaseRecord("abc x")).toBeUndefined();
  });
});

describe("an announcer's lease table", () => {
  it("waits, after its follower starts, a whole lease: grants from before it are unknown", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(10);
    const settled = table.settled(11, time.now());
    table.advance(11);
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 1);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles once every holder with a grant before the notice said it applied it", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    table.record(1, { holder: "g1", grant: 1 });
    table.record(2, { holder: "g2", grant: 1 });
    const settled = table.settled(3, time.now());
    table.advance(3);
    expect(await isSettled(settled)).toBe(false);
    table.acked("g1", 3);
    expect(await isSettled(settled)).toBe(false);
    table.acked("g2", 2); // not far enough
    expect(await isSettled(settled)).toBe(false);
    table.acked("g2", 4);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not settle before its own follower has applied the notice (a grant just before it may be unseen)", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    const settled = table.settled(2, time.now());
    expect(await isSettled(settled)).toBe(false);
    table.record(1, { holder: "g1", grant: 1 });
    table.advance(2);
    expect(await isSettled(settled)).toBe(false); // g1's grant came first: it must say so
    table.acked("g1", 2);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not wait for a holder whose grants all come after the notice", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    const settled = table.settled(1, time.now());
    table.advance(1);
    table.record(2, { holder: "g1", grant: 1 });
    expect(await isSettled(settled)).toBe(true);
  });

  it("waits for a silent holder until its grant runs out by the announcer's count, renewals after the notice aside", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    table.record(1, { holder: "g1", grant: 1 });
    time.advance(500);
    const settled = table.settled(2, time.now());
    table.advance(2);
    // Its renewal stored after the notice: it can only hold it once it applied the notice.
    table.record(3, { holder: "g1", grant: 2 });
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 501);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not wait for a holder that released its lease", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    table.record(1, { holder: "g1", grant: 1 });
    const settled = table.settled(2, time.now());
    table.advance(2);
    expect(await isSettled(settled)).toBe(false);
    table.record(3, { holder: "g1", released: true });
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles a lease after the announce at the latest, its follower stopped or behind", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    table.record(1, { holder: "g1", grant: 1 });
    table.stopped();
    const sentAt = time.now();
    time.advance(30);
    const settled = table.settled(5, sentAt);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 31);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("forgets what it knew when its follower starts over: a whole lease again", async () => {
    const time = manualTime();
    const table = new LeaseTable(time.now, time.timers);
    table.restart(0);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    table.record(1, { holder: "g1", grant: 1 });
    table.acked("g1", 1);
    table.restart(5);
    const settled = table.settled(6, time.now());
    table.advance(6);
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });
});
