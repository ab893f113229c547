import { describe, expect, it } from "vitest";
import {
  decodeLeaseRecord,
  encodeLeaseRecord,
  LEASE_COUNTED_BY_ANNOUNCER_MS,
  LEASE_MS,
  LeaseHolder,
  type LeaseMark,
  type LeaseRecord,
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
  /**
   * A table whose follower of the lease records started a lease ago (no unknown grants left) on a
   * stream with none, and the stream's leader it asks for the last one.
   */
  function table() {
    const time = manualTime();
    const stream = { last: null as LeaseMark | null, questions: 0 };
    const leases = new LeaseTable(time.now, time.timers, async () => {
      stream.questions++;
      return stream.last;
    });
    leases.restart(false, null);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    /** A lease record stored at `seq`, not yet read by the announcer's follower. */
    const stored = (seq: number, record: LeaseRecord) => {
      stream.last = mark(seq, record);
    };
    /** A lease record stored at `seq` and read by the announcer's follower. */
    const read = (seq: number, record: LeaseRecord) => {
      stored(seq, record);
      leases.record(seq, record);
    };
    /** An announce whose notice was stored at `seq`: its wait. */
    const announce = (seq: number, sentAt = time.now()) => leases.settled(seq, sentAt);
    return { time, leases, stream, stored, read, announce };
  }
  const mark = (seq: number, record: LeaseRecord): LeaseMark => ({ seq, record: encodeLeaseRecord(record) });

  it("waits, after its follower starts, a whole lease: grants from before it are unknown", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers, async () => null);
    leases.restart(false, null);
    const settled = leases.settled(11, time.now());
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 1);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles at once when a follower that replays the whole stream reached its end and read no grant", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers, async () => null);
    leases.restart(true);
    const settled = leases.settled(11, time.now());
    expect(await isSettled(settled)).toBe(false); // still reading what came before
    leases.caughtUp();
    expect(await isSettled(settled)).toBe(true);
  });

  it("still waits, after a replay, for a holder whose grant it read there until it says it applied the notice", async () => {
    const time = manualTime();
    const grant = { holder: "g1", grant: 7 };
    const leases = new LeaseTable(time.now, time.timers, async () => mark(3, grant));
    leases.restart(true);
    time.advance(100);
    leases.record(3, grant); // stored long ago, read now: counted from now
    leases.caughtUp();
    const settled = leases.settled(11, time.now());
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g1", 11, mark(3, grant));
    expect(await isSettled(settled)).toBe(true);
    // Silent, it is waited out by the announcer's count from when the replay read its grant.
    const silent = leases.settled(12, time.now());
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 1);
    expect(await isSettled(silent)).toBe(false);
    time.advance(1);
    expect(await isSettled(silent)).toBe(true);
  });

  it("does not end the blind count on a replay's end after it started over at the channel's end", async () => {
    const time = manualTime();
    const leases = new LeaseTable(time.now, time.timers, async () => null);
    leases.restart(true);
    leases.restart(false, null);
    leases.caughtUp(); // a late word from the replay before: the grants from before are unknown
    const settled = leases.settled(11, time.now());
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles once every holder with a grant before the notice said it applied it, on their acks alone", async () => {
    const { leases, stream, read, announce } = table();
    read(1, { holder: "g1", grant: 1 });
    read(2, { holder: "g2", grant: 1 });
    const settled = announce(3);
    expect(await isSettled(settled)).toBe(false);
    // Each holder's ack shows the last lease record it applied: all the marks needed.
    leases.acked("g1", 3, mark(2, { holder: "g2", grant: 1 }));
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g2", 2, mark(2, { holder: "g2", grant: 1 })); // not far enough
    expect(await isSettled(settled)).toBe(false);
    leases.acked("g2", 4, mark(2, { holder: "g2", grant: 1 }));
    expect(await isSettled(settled)).toBe(true);
    expect(stream.questions).toBe(0);
  });

  it("waits for a grant stored just before the notice that its follower has not read yet", async () => {
    const { leases, stream, stored, announce } = table();
    const grant = { holder: "g1", grant: 1 };
    stored(1, grant);
    const settled = announce(2);
    // No holder known: it asks the stream's leader, whose last lease record it has not read.
    expect(await isSettled(settled)).toBe(false);
    expect(stream.questions).toBe(1);
    leases.record(1, grant);
    expect(await isSettled(settled)).toBe(false); // g1 may answer under it
    leases.acked("g1", 2, mark(1, grant));
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles with no holder at all once its follower read the last lease record the stream's leader shows", async () => {
    const { leases, stream, stored, announce } = table();
    const release = { holder: "g1", released: true } as const;
    stored(1, release);
    const settled = announce(2);
    expect(await isSettled(settled)).toBe(false);
    leases.record(1, release);
    expect(await isSettled(settled)).toBe(true);
    expect(stream.questions).toBe(1);
  });

  it("asks the stream's leader one question at a time, for every notice stored while one was out", async () => {
    const { stream, read, announce } = table();
    read(1, { holder: "g1", released: true });
    const settled = [announce(2), announce(3), announce(4)];
    expect(await isSettled(Promise.all(settled))).toBe(true);
    expect(stream.questions).toBe(2); // the first for 2; the second, after it, for 3 and 4
  });

  it("takes no mark whose record differs from what its follower read there (the stream made again)", async () => {
    const { time, leases, stream, read, announce } = table();
    read(1, { holder: "g1", released: true });
    stream.last = mark(1, { holder: "g9", released: true });
    const settled = announce(5);
    leases.acked("g9", 5, mark(1, { holder: "g9", released: true }));
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 1);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("takes no holder's mark for a notice after what the holder says it applied", async () => {
    const { time, leases, read, announce } = table();
    const grant = { holder: "g1", grant: 1 };
    read(1, grant);
    const settled = announce(3);
    leases.acked("g1", 2, mark(1, grant));
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not wait for a holder whose grants all come after the notice", async () => {
    const { read, announce } = table();
    read(1, { holder: "g0", released: true });
    const settled = announce(2);
    read(3, { holder: "g1", grant: 1 });
    expect(await isSettled(settled)).toBe(true);
  });

  it("waits for a silent holder until its grant runs out by the announcer's count, renewals after the notice aside", async () => {
    const { time, read, announce } = table();
    read(1, { holder: "g1", grant: 1 });
    time.advance(500);
    const settled = announce(2);
    // Its renewal stored after the notice: it can only hold it once it applied the notice.
    read(3, { holder: "g1", grant: 2 });
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 501);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("does not wait for a holder that released its lease", async () => {
    const { read, announce } = table();
    read(1, { holder: "g1", grant: 1 });
    const settled = announce(2);
    expect(await isSettled(settled)).toBe(false);
    read(3, { holder: "g1", released: true });
    expect(await isSettled(settled)).toBe(true);
  });

  it("settles a lease after the announce at the latest, its follower stopped or behind", async () => {
    const { time, leases, read, announce } = table();
    read(1, { holder: "g1", grant: 1 });
    leases.stopped();
    const sentAt = time.now();
    time.advance(30);
    const settled = announce(5, sentAt);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS - 31);
    expect(await isSettled(settled)).toBe(false);
    time.advance(1);
    expect(await isSettled(settled)).toBe(true);
  });

  it("forgets what it knew when its follower starts over: a whole lease again", async () => {
    const { time, leases, read, announce } = table();
    read(1, { holder: "g1", grant: 1 });
    leases.acked("g1", 100, mark(1, { holder: "g1", grant: 1 }));
    leases.restart(false, mark(1, { holder: "g1", grant: 1 }));
    const settled = announce(6);
    expect(await isSettled(settled)).toBe(false);
    time.advance(LEASE_COUNTED_BY_ANNOUNCER_MS);
    expect(await isSettled(settled)).toBe(true);
  });
});
