/** Notice channels (`MessageBus.announce` / `follow`): the rules both adapters share. */

/** The longest a barrier waits (for the channel's end, then for the notices up to it). */
export const NOTICE_BARRIER_WAIT_MS = 1_000;
/** A notice channel's bounds (NATS: the stream's max_age and max_msgs): notices are consumed live. */
export const NOTICE_MAX_AGE_MS = 3_600_000;
export const NOTICE_MAX_MSGS = 100_000;

/**
 * Marks a stored notice message that holds several notices (NATS): its value is how many, its body
 * their JSON array, in the order they were announced. A message without it holds one notice.
 */
export const NOTICE_COUNT_HEADER = "Notice-Count";
/** The most notices one stored message holds (those announced in one turn of the event loop). */
export const NOTICE_BATCH_MAX = 256;

/**
 * The highest sequence of a channel a follower has applied, and the barriers waiting for it.
 * Sequences only grow between restarts; a restart sets the follower at the channel's end.
 */
export class AppliedSequence {
  private seq = 0;
  private readonly waiting = new Set<{ seq: number; settle: (ok: boolean) => void }>();

  get value(): number {
    return this.seq;
  }

  /** The follower (re)started at `seq`, the channel's end then: everything up to it is covered. */
  restart(seq: number): void {
    this.seq = seq;
    this.release();
  }

  /** The notice `seq` has been applied. */
  advance(seq: number): void {
    if (seq <= this.seq) return;
    this.seq = seq;
    this.release();
  }

  /** True once `seq` is applied; false after `timeoutMs`, or at `abandon`. */
  reach(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.seq >= seq) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter = {
        seq,
        settle: (ok: boolean) => {
          clearTimeout(timer);
          this.waiting.delete(waiter);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.settle(false), Math.max(0, timeoutMs));
      this.waiting.add(waiter);
    });
  }

  /** The barriers waiting now will not be answered (the follower stopped): false to each. */
  abandon(): void {
    for (const waiter of [...this.waiting]) waiter.settle(false);
  }

  private release(): void {
    for (const waiter of [...this.waiting]) if (waiter.seq <= this.seq) waiter.settle(true);
  }
}
