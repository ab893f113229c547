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
    expect(decodeLeaseRecord(encodeLeaseRecord({ holder: "abc", grant: 7 }))).toEqual({
      holder: "abc",
      grant: 7,
    });
    expect(decodeLeaseRecord(encodeLeaseRecord({ holder: "abc", released: true }))).toEqual({
      holder: "abc",
      released: true,
    });
    expect(decodeLeaseRecord("abc")).toBeUndefined();
    expect(decodeLeaseRecord("abc x")).toBeUndefined();
  });
});

describe("an announcer's lease table", () => {
  /** A table whose follower started a lease ago (no unknown grants left), and its notices. */
  function table() {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers);
    leases.restart();
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    /** An announce stored at `seq`: its wait, and its follower seeing it there. */
    const announce = (seq: number, sentAt = time.now()) => {
      const notice = leases.nextNotice();
      return { settled: leases.settled(seq, notice, sentAt), seen: () => leases.own(seq, notice) };
    };
    return { time, leases, announce };
  }

  it("waits, after its follower starts, a whole lease: grants from before it are unknown", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers);
    leases.restart();
    const notice = leases.nextNotice();
    const settled = leases.settled(11, notice, time.now());
    leases.own(11, notice);
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 1);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles at once when a follower that replays the whole stream reached its end and read no grant", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers);
    leases.restart(true);
    const notice = leases.nextNotice();
    const settled = leases.settled(11, notice, time.now());
    leases.own(11, notice);
    expect(await isSettled(settled)).toBe(false); // still reading what came before
    leases.caughtUp();
    expect(await isSettled(settled)).toBe(true);
  });

  it("still waits, after a replay, for a holder whose grant it read there until it says it applied the notice", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers);
    leases.restart(true);
    time.advance(100);
    leases.record(3, { holder: "g1", grant: 7 }); // stored long ago, read now: counted from now
    leases.caughtUp();
    const notice = leases.nextNotice();
    const settled = leases.settled(11, notice, time.now());
    leases.own(11, notice);
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g1", 11);
    expect(await isSettled(settled)).toBe(true);
    // Silent, it is waited out by the announcer's count from when the replay read its grant.
    const later = leases.nextNotice();
    const silent = leases.settled(12, later, time.now());
    leases.own(12, later);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 1);
    expect(await isSettled(silent)).toBe(false);
    time.advance(1);
    expect(await isSettled(silent)).toBe(true);
  });

  it("does not end the blind count on a replay's end after it started over at the channel's end", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers);
    leases.restart(true);
    leases.restart();
    leases.caughtUp(); // a late word from the replay before: the grants from before are unknown
    const notice = leases.nextNotice();
    const settled = leases.settled(11, notice, time.now());
    leases.own(11, notice);
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles once every holder with a grant before the notice said it applied it", async () => {
    const { leases, announce } = table();
    leases.record(1, { holder: "g1", grant: 1 });
    leases.record(2, { holder: "g2", grant: 1 });
    const { settled, seen } = announce(3);
    seen();
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g1", 3);
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g2", 2); // not far enough
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g2", 4);
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles with no holder at all once its follower has seen the notice, and not before", async () => {
    const { announce } = table();
    const { settled, seen } = announce(1);
    expect(await isSettled(settled)).toBe(false); // a grant just before it may be unseen
    seen();
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not settle early when its follower sees the notice elsewhere than it was stored (the stream made again)", async () => {
    const { time, leases } = table();
    const notice = leases.nextNotice();
    const settled = leases.settled(5, notice, time.now());
    leases.own(9, notice);
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not wait for a holder whose grants all come after the notice", async () => {
    const { leases, announce } = table();
    const { settled, seen } = announce(1);
    seen();
    leases.record(2, { holder: "g1", grant: 1 });
    expect(await isSettled(settled)).toBe(true);
  });

  it("waits for a silent holder until its grant runs out by the announcer's count, renewals after the notice aside", async () => {
    const { time, leases, announce } = table();
    leases.record(1, { holder: "g1", grant: 1 });
    time.advance(500);
    const { settled, seen } = announce(2);
    seen();
    // Its renewal stored after the notice: it can only hold it once it applied the notice.
    leases.record(3, { holder: "g1", grant: 2 });
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 501);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not wait for a holder that released its lease", async () => {
    const { leases, announce } = table();
    leases.record(1, { holder: "g1", grant: 1 });
    const { settled, seen } = announce(2);
    seen();
    expect(await isSettled(settled)).toBe(false);
    leases.record(3, { holder: "g1", released: true });
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles a lease after the announce at the latest, its follower stopped or behind", async () => {
    const { time, leases, announce } = table();
    leases.record(1, { holder: "g1", grant: 1 });
    leases.stopped();
    const sentAt = time.now();
    time.advance(30);
    const { settled } = announce(5, sentAt);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 31);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("forgets what it knew when its follower starts over: a whole lease again", async () => {
    const { time, leases, announce } = table();
    leases.record(1, { holder: "g1", grant: 1 });
    leases.acked("g1", 100);
    leases.restart();
    const { settled, seen } = announce(6);
    seen();
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });
});
