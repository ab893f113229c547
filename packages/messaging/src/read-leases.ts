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

/**
 * The header a lease record carries (its body is empty). Lease records have a subject of their
 * own on the channel's stream (`notices.<channel>.lease`), beside the notices (`notices.<channel>`).
 */
export const LEASE_HEADER = "Notice-Lease";

/**
 * A lease record as a follower applied it, by its sequence on the channel: what a holder's ack, or
 * the stream's leader, shows an announcer so that it knows its follower has read every lease record
 * before a notice (see {@link LeaseTable}).
 */
export interface LeaseMark {
  seq: number;
  /** The record's {@link LEASE_HEADER} as stored (a holder's id and grant: unique per stream). */
  record: string;
}

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
  deadline: number;
  settle: () => void;
  timer: unknown;
  /** The moment `timer` is set for. */
  at: number;
  /** A question to the stream's leader taken after this notice was stored has been sent. */
  asked: boolean;
}

function sameMark(mark: LeaseMark, other: LeaseMark | null | undefined): boolean {
  return mark.seq === other?.seq && mark.record === other.record;
}

/** The most lease records an announcer remembers, by sequence, to check a mark against. */
const MARKS_KEPT = 256;

/**
 * The announcer's side: the grants on the channel (from its own follower of the channel's lease
 * records) and what their holders said they applied. `settled(seq)` resolves once no holder can
 * answer without having applied `seq`: each holder with a grant before `seq` either said it
 * applied `seq`, or released, or its grant ran out. Never later than a lease after the announce
 * was sent: any grant before the notice was asked for before it was stored, so it has run out by
 * then, known or not.
 *
 * Its follower reads only the lease records (a subject of their own), never a notice, so it must
 * learn otherwise that it has read every lease record before `seq` (a grant just before it may
 * not have come yet): a mark, a lease record `m` such that every lease record before `seq` is at
 * or before `m`, that its follower has applied, with the same content (so in the same stream). A
 * holder's ack that it applied `seq` or more carries one (the last lease record it applied: it
 * reads the whole stream in order); when no such ack settles a notice (no holder, or only silent
 * ones), the stream's leader is asked for its last lease record ({@link LeaseTable} `lastLease`),
 * once for every notice stored before the question.
 */
export class LeaseTable {
  private readonly holders = new Map<string, Holder>();
  /** Grants from before the follower started are unknown: nothing settles early before this. */
  private blindUntil = Number.POSITIVE_INFINITY;
  /** The follower started at the stream's first record and has not reached its end yet. */
  private replaying = false;
  private readonly waiters = new Set<Waiter>();
  /** Every lease record before a notice up to this sequence is known (this run of the follower). */
  private covered = 0;
  /** The lease records this run of the follower applied lately, by sequence. */
  private readonly marks = new Map<number, string>();
  /** The last lease record this run of the follower applied (0: none yet). */
  private last = 0;
  /** Marks not applied yet, and up to which notice each covers once it is. */
  private pending: { mark: LeaseMark; through: number }[] = [];
  private asking = false;
  /** The stream's last lease record when this run of the follower started, after which it reads. */
  private start: LeaseMark | null | undefined;

  constructor(
    private readonly now: Now,
    private readonly timers: Timers = realTimers,
    /**
     * The channel's last lease record, asked of its stream's leader after the notices it is to
     * cover were stored (null: the stream holds none).
     */
    private readonly lastLease?: () => Promise<LeaseMark | null>,
  ) {}

  /**
   * The follower (re)started, as told just now (after the answer came): at the channel's end
   * (`start`: its last lease record then, null if none, which the follower reads after), or
   * (`replaying`) at its first record, where it reads every grant and release the stream ever
   * held before it reaches the end ({@link caughtUp}). Either way no announce settles early for a
   * lease's count from now, unless the replay reaches the end first. A consumer re-created (from
   * where it was, perhaps in a stream made again) is a restart too.
   */
  restart(replaying = false, start?: LeaseMark | null): void {
    this.forget();
    this.start = replaying ? undefined : start;
    this.blindUntil = this.now() + LEASE_COUNTED_BY_ANNOUNCER_MS;
    this.replaying = replaying;
    this.check();
  }

  /**
   * The replaying follower applied the last lease record the channel held when it started: every
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
    this.forget();
    this.blindUntil = Number.POSITIVE_INFINITY;
    this.replaying = false;
  }

  private forget(): void {
    this.holders.clear();
    this.covered = 0;
    this.marks.clear();
    this.last = 0;
    this.pending = [];
  }

  /** The follower applied the lease record `seq` (`stored`: its {@link LEASE_HEADER}). */
  record(
    seq: number,
    record: LeaseRecord | undefined,
    stored = record ? encodeLeaseRecord(record) : "",
  ): void {
    if (record && "released" in record) this.holders.delete(record.holder);
    else if (record) {
      const holder = this.holders.get(record.holder) ?? { grants: [], applied: 0 };
      const now = this.now();
      holder.grants = holder.grants.filter((grant) => grant.until > now);
      holder.grants.push({ seq, until: now + LEASE_COUNTED_BY_ANNOUNCER_MS });
      this.holders.set(record.holder, holder);
    }
    this.last = seq;
    this.marks.set(seq, stored);
    if (this.marks.size > MARKS_KEPT)
      for (const first of this.marks.keys()) if (this.marks.delete(first)) break;
    let through = 0;
    if (this.pending.length > 0) {
      for (const { mark, through: upTo } of this.pending)
        if (mark.seq === seq && mark.record === stored) through = Math.max(through, upTo);
      this.pending = this.pending.filter(({ mark }) => mark.seq > seq);
    }
    if (through > this.covered) this.covered = through;
    this.check();
  }

  /**
   * A holder said it applied up to `seq`, and (`mark`) the last lease record it applied in this run
   * of its follower: every lease record before `seq` is at or before that one.
   */
  acked(holderId: string, seq: number, mark?: LeaseMark): void {
    const holder = this.holders.get(holderId);
    let changed = false;
    if (holder && seq > holder.applied) {
      holder.applied = seq;
      changed = true;
    }
    if (mark && seq > this.covered && this.waiters.size > 0) changed = this.marked(mark, seq) || changed;
    if (changed) this.check();
  }

  /**
   * Every lease record before `through` is at or before `mark` (null: there is none): true if
   * that covers more now; a mark this follower has not applied yet waits for it.
   */
  private marked(mark: LeaseMark | null, through: number): boolean {
    if (through <= this.covered) return false;
    if (mark === null) {
      // The stream holds none: so must this run of the follower (else it reads another stream).
      if (this.last !== 0 || this.start != null) return false;
    } else if (sameMark(mark, this.start)) {
      // The last lease record when the follower started (before it, the blind count stands).
    } else if (mark.seq > this.last) {
      this.pending.push({ mark, through });
      if (this.pending.length > MARKS_KEPT) this.pending.shift();
      return false;
    } else if (this.marks.get(mark.seq) !== mark.record) return false;
    this.covered = through;
    return true;
  }

  /**
   * Resolves once no holder can answer without having applied `seq`, where this announcer's
   * notice was stored after `sentAt` (when its announce was sent); by `sentAt` plus a lease at
   * the latest.
   */
  settled(seq: number, sentAt: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        seq,
        deadline: sentAt + LEASE_COUNTED_BY_ANNOUNCER_MS,
        settle: () => {
          this.timers.clear(waiter.timer);
          this.waiters.delete(waiter);
          resolve();
        },
        timer: undefined,
        at: Number.NaN,
        asked: false,
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
   * each time was a timer and ~4 KB of garbage per create in the catalogue. A waiter that only
   * lacks its mark asks the stream's leader for one.
   */
  private checkOne(waiter: Waiter): void {
    const now = this.now();
    if (waiter.deadline <= now) {
      waiter.settle();
      return;
    }
    const byLeases = this.settlesAt(waiter);
    let at: number;
    if (waiter.seq <= this.covered) {
      if (byLeases <= now) {
        waiter.settle();
        return;
      }
      at = byLeases;
    } else if (byLeases <= now) {
      // Only its mark is missing: the stream's leader is asked, unless it was for this notice, or
      // a holder's mark for it waits for a lease record the follower is about to read.
      if (!waiter.asked && !this.pending.some(({ through }) => through >= waiter.seq)) this.ask();
      at = waiter.deadline;
    } else at = waiter.asked ? waiter.deadline : byLeases;
    at = Math.min(at, waiter.deadline);
    if (waiter.timer !== undefined && waiter.at === at) return;
    this.timers.clear(waiter.timer);
    waiter.at = at;
    waiter.timer = this.timers.set(() => {
      waiter.timer = undefined;
      this.checkOne(waiter);
    }, at - now);
  }

  /**
   * Asks the stream's leader for its last lease record, for every notice stored so far that still
   * lacks a mark (each asks once: one that its answer does not cover waits for an ack's mark, or
   * its deadline). One question at a time: notices stored meanwhile ask again after it.
   */
  private ask(): void {
    if (this.asking || !this.lastLease) return;
    let through = 0;
    for (const waiter of this.waiters)
      if (waiter.seq > this.covered && !waiter.asked) {
        waiter.asked = true;
        through = Math.max(through, waiter.seq);
      }
    if (through === 0) return;
    this.asking = true;
    this.lastLease().then(
      (mark) => {
        this.asking = false;
        this.marked(mark, through);
        this.check();
      },
      () => {
        // Unanswered: those notices wait for an ack's mark, or their deadline.
        this.asking = false;
        this.check();
      },
    );
  }

  /**
   * When the waiter settles if nothing more is heard, its mark aside: the last of the unknown
   * grants' end (a follower that started lately) and the grants before its sequence of the holders
   * that have not said they applied it.
   */
  private settlesAt({ seq }: Waiter): number {
    let at = this.blindUntil;
    for (const holder of this.holders.values()) {
      if (holder.applied >= seq) continue;
      for (const grant of holder.grants) if (grant.seq < seq && grant.until > at) at = grant.until;
    }
    return at;
  }
}
