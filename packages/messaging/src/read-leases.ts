/**
 * Read leases on a notice channel (docs/architecture.md, "Change notices and the gateway's read
 * cache"). A follower that holds a lease may answer from what it keeps without asking the
 * channel's owner first; an announcer waits, before its `announce` resolves, until every lease
 * holder that could answer without having applied its notice has said it applied it, or its lease
 * has run out.
 *
 * Clocks: each side counts on its own monotonic clock (never the wall clock, never another host's);
 * the only assumption is that two hosts' monotonic clocks run at rates within a third of each other
 * over a lease (the announcer counts {@link LEASE_COUNTED_BY_ANNOUNCER_MS} for the holder's
 * {@link LEASE_MS}).
 */

/** How long a grant lets its holder answer, counted by the holder from before it asked. */
export const LEASE_MS = 1_500;
/** How often a holder asks for a new grant. */
export const LEASE_RENEW_MS = 400;
/** How long an announcer counts a grant, from when it saw it (a third more: the clocks' rates). */
export const LEASE_COUNTED_BY_ANNOUNCER_MS = 2_000;

/** A monotonic clock, in milliseconds. */
export type Now = () => number;

/** Timers, injected so the tests advance time themselves. */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What a lease record on the channel says: a holder's grant (numbered by the holder) or its release. */
export type LeaseRecord = { holder: string; grant: number } | { holder: string; released: true };

/** The header a lease record carries (its body is empty; it is no notice). */
export const LEASE_HEADER = "Notice-Lease";
/** The header a notice carries: its announcer and its number there (`<announcer> <n>`). */
export const FROM_HEADER = "Notice-From";

export function encodeLeaseRecord(record: LeaseRecord): string {
  return "released" in record ? `${record.holder} released` : `${record.holder} ${record.grant}`;
}

export function decodeLeaseRecord(value: string): LeaseRecord | undefined {
  const [holder, what] = value.split(" ");
  if (!holder || !what) return undefined;
  if (what === "released") return { holder, released: true };
  const grant = Number(what);
  return Number.isSafeInteger(grant) ? { holder, grant } : undefined;
}

/**
 * The holder's side. A grant counts from the moment before it was asked for, and only once the
 * holder's follower has applied it: every notice stored before it has been applied then, and every
 * announcer whose notice comes after it knows the holder.
 */
export class LeaseHolder {
  private granted = 0;
  /** When each grant not yet applied was asked for. */
  private readonly asked = new Map<number, number>();
  private until = Number.NEGATIVE_INFINITY;
  private ended = false;

  constructor(
    readonly id: string,
    private readonly now: Now,
  ) {}

  /** The next grant to append to the channel, counted from now. */
  ask(): LeaseRecord {
    const grant = ++this.granted;
    this.asked.set(grant, this.now());
    return { holder: this.id, grant };
  }

  /** The follower applied one of this holder's grants. */
  applied(grant: number): void {
    const askedAt = this.asked.get(grant);
    for (const earlier of this.asked.keys()) if (earlier <= grant) this.asked.delete(earlier);
    if (askedAt === undefined || this.ended) return;
    this.until = Math.max(this.until, askedAt + LEASE_MS);
  }

  /** No read is answered under the lease any more (closing): the release can be appended after. */
  end(): void {
    this.ended = true;
    this.until = Number.NEGATIVE_INFINITY;
    this.asked.clear();
  }

  /** True while a grant the follower applied still runs. */
  get valid(): boolean {
    return this.now() < this.until;
  }
}

interface Holder {
  /** The grants seen, by their sequence on the channel, with when the announcer counts them out. */
  grants: { seq: number; until: number }[];
  /** The highest sequence the holder said it applied. */
  applied: number;
}

interface Waiter {
  seq: number;
  /** The notice's number at this announcer: its follower must see it at `seq`. */
  notice: number;
  deadline: number;
  settle: () => void;
  timer: unknown;
  /** The moment `timer` is set for. */
  at: number;
}

/**
 * The announcer's side: the grants on the channel (from its own follower of it) and what their
 * holders said they applied. `settled(seq)` resolves once no holder can answer without having
 * applied `seq`: each holder with a grant before `seq` either said it applied `seq`, or released,
 * or its grant ran out. Never later than a lease after the announce was sent: any grant before
 * the notice was asked for before it was stored, so it has run out by then, known or not.
 */
export class LeaseTable {
  private readonly holders = new Map<string, Holder>();
  /** Grants from before the follower started are unknown: nothing settles early before this. */
  private blindUntil = Number.POSITIVE_INFINITY;
  /** The follower started at the stream's first record and has not reached its end yet. */
  private replaying = false;
  private readonly waiters = new Set<Waiter>();
  /** Where this announcer's follower saw its own notices (by number), not yet waited for. */
  private readonly seen = new Map<number, number>();
  private numbered = 0;

  constructor(
    private readonly now: Now,
    private readonly timers: Timers = realTimers,
  ) {}

  /**
   * The follower (re)started, as told just now (after the answer came): at the channel's end, or
   * (`replaying`) at its first record, where it reads every grant and release the stream ever
   * held before it reaches the end ({@link caughtUp}). Either way no announce settles early for a
   * lease's count from now, unless the replay reaches the end first.
   */
  restart(replaying = false): void {
    this.holders.clear();
    this.blindUntil = this.now() + LEASE_COUNTED_BY_ANNOUNCER_MS;
    this.replaying = replaying;
    this.check();
  }

  /**
   * The replaying follower applied the record that was the channel's end when it started: every
   * grant ever stored on the stream before then is in the table (counted from when it was seen,
   * as any grant), so none is unknown any more.
   */
  caughtUp(): void {
    if (!this.replaying) return;
    this.replaying = false;
    this.blindUntil = Number.NEGATIVE_INFINITY;
    this.check();
  }

  /** The follower stopped: nothing is known any more until it restarts. */
  stopped(): void {
    this.holders.clear();
    this.blindUntil = Number.POSITIVE_INFINITY;
    this.replaying = false;
  }

  /** The follower applied the lease record `seq`. */
  record(seq: number, record: LeaseRecord): void {
    if ("released" in record) this.holders.delete(record.holder);
    else {
      const holder = this.holders.get(record.holder) ?? { grants: [], applied: 0 };
      const now = this.now();
      holder.grants = holder.grants.filter((grant) => grant.until > now);
      holder.grants.push({ seq, until: now + LEASE_COUNTED_BY_ANNOUNCER_MS });
      this.holders.set(record.holder, holder);
    }
    this.check();
  }

  /** The number of this announcer's next notice (sent with it, {@link FROM_HEADER}). */
  nextNotice(): number {
    return ++this.numbered;
  }

  /** The follower applied this announcer's own notice `notice` at `seq`. */
  own(seq: number, notice: number): void {
    this.seen.set(notice, seq);
    // Notices whose announce failed are never waited for: keep the latest few thousand.
    if (this.seen.size > 4_096) for (const first of this.seen.keys()) if (this.seen.delete(first)) break;
    // Only that notice's waiter can settle sooner for it (one whose notice fell out of `seen` settles
    // later, not sooner: its timer finds that out when it fires).
    for (const waiter of this.waiters) if (waiter.notice === notice) this.checkOne(waiter);
  }

  /** A holder said it applied up to `seq`. */
  acked(holderId: string, seq: number): void {
    const holder = this.holders.get(holderId);
    if (!holder || seq <= holder.applied) return;
    holder.applied = seq;
    this.check();
  }

  /**
   * Resolves once no holder can answer without having applied `seq`, where this announcer's
   * notice `notice` was stored after `sentAt` (when its announce was sent); by `sentAt` plus a
   * lease at the latest.
   */
  settled(seq: number, notice: number, sentAt: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        seq,
        notice,
        deadline: sentAt + LEASE_COUNTED_BY_ANNOUNCER_MS,
        settle: () => {
          this.timers.clear(waiter.timer);
          this.waiters.delete(waiter);
          this.seen.delete(notice);
          resolve();
        },
        timer: undefined,
        at: Number.NaN,
      };
      this.waiters.add(waiter);
      this.checkOne(waiter);
    });
  }

  /** Holders known (for tests). */
  get size(): number {
    return this.holders.size;
  }

  private check(): void {
    // A waiter that settles leaves the set; a Set's iteration goes on past it.
    for (const waiter of this.waiters) this.checkOne(waiter);
  }

  /**
   * Settles `waiter` when it may; else sets its timer for the moment it may, unless it is set for
   * that moment already: every record and ack checks every waiter, and re-arming each one's timer
   * each time was a timer and ~4 KB of garbage per create in the catalogue.
   */
  private checkOne(waiter: Waiter): void {
    const now = this.now();
    const at = Math.min(waiter.deadline, this.settlesAt(waiter));
    if (at <= now) {
      waiter.settle();
      return;
    }
    if (waiter.timer !== undefined && waiter.at === at) return;
    this.timers.clear(waiter.timer);
    waiter.at = at;
    waiter.timer = this.timers.set(() => {
      waiter.timer = undefined;
      this.checkOne(waiter);
    }, at - now);
  }

  /**
   * When the waiter settles if nothing more is heard: the last of the unknown grants' end (a
   * follower that started lately) and the grants before its sequence of the holders that have not
   * said they applied it; never before the follower has seen the waiter's own notice there (a
   * grant before it may be unseen; elsewhere, or not at all, the stream was made again or the
   * follower skipped it: only the deadline is sure).
   */
  private settlesAt({ seq, notice }: Waiter): number {
    if (this.seen.get(notice) !== seq) return Number.POSITIVE_INFINITY;
    let at = this.blindUntil;
    for (const holder of this.holders.values()) {
      if (holder.applied >= seq) continue;
      for (const grant of holder.grants) if (grant.seq < seq && grant.until > at) at = grant.until;
    }
    return at;
  }
}
