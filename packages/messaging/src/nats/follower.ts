/**
 * A notice channel's stream, followed in order, with its read lease.
 */
import { type Consumer, ConsumerEvents, DeliverPolicy, type JsMsg } from "nats";
import { decodeJson } from "../json.ts";
import { AppliedSequence, NOTICE_BARRIER_WAIT_MS, NOTICE_COUNT_HEADER } from "../notices.ts";
import { BusUnavailableError, type FollowHandlers } from "../port.ts";
import {
  decodeLeaseRecord,
  LEASE_HEADER,
  LEASE_RENEW_MS,
  type LeaseHolder,
  type LeaseMark,
  type LeaseRecord,
} from "../read-leases.ts";
import { assertNoticeChannel } from "../subjects.ts";
import type { BusContext } from "./context.ts";
import { signal, unlessLost } from "./link.ts";

/**
 * A notice channel's stream and its two subjects there: the announcers' notices (`subject`) and
 * the followers' read-lease records (`lease`), each appended by one side only, so that an
 * announcer's follower reads the lease records alone; and the subject its lease holders tell the
 * announcers on what they applied (`applied`: core NATS, not stored).
 */
export function noticeStream(channel: string): {
  stream: string;
  subject: string;
  lease: string;
  applied: string;
} {
  assertNoticeChannel(channel);
  return {
    stream: `NOTICES_${channel}`,
    subject: `notices.${channel}`,
    lease: `notices.${channel}.lease`,
    applied: `notices.${channel}.applied`,
  };
}

/**
 * A replay of a notice stream from its first record: the last record it reads to (for an
 * announcer's follower, the last lease record then), and the stream's `created`.
 */
export interface Replay {
  end: number;
  created: string;
}

/** What an announcer's own follower of a channel tells its lease table. */
interface FollowerHooks {
  /** The one subject of the stream it reads (a filtered consumer); else every record. */
  only?: string;
  /**
   * Where it starts when it does not replay: after `seq`, with (`mark`) the stream's last lease
   * record then; else after the channel's last notice.
   */
  startAt?(): Promise<{ seq: number; mark?: LeaseMark | null }>;
  /** Where a start may replay the whole stream (from sequence 1), or undefined: start at its end. */
  replayable?(): Promise<Replay | undefined>;
  /** The channel's stream is still the first one, made at `created` (a replay's stream). */
  stillFirst?(created: string): Promise<boolean>;
  /**
   * Started after the channel's end (`mark`: its last lease record then), as the leader just told
   * it, or (`replaying`) at its start.
   */
  onStart?(replaying: boolean, mark?: LeaseMark | null): void;
  /**
   * A replay applied every record up to the end it started for, without a gap, and the stream is
   * still the one it read.
   */
  onCaughtUp?(): void;
  /** Applied the lease record `seq` (`stored`: its header as stored; `record` undefined: unreadable). */
  onRecord?(seq: number, record: LeaseRecord | undefined, stored: string): void;
  /** Stopped following (a drop, a close): it may miss records until it starts again. */
  onStop?(): void;
}

/**
 * A follower's read lease: a holder per run of its consumer (so what an announcer heard from an
 * earlier run, whose sequences may be another stream's, never stands for this one), its grants
 * appended to the channel, and its acks of what it applied.
 */
interface FollowerLease {
  holder(): LeaseHolder;
  append(record: LeaseRecord): Promise<unknown>;
  /** Says it applied up to `seq`; `mark`: the last lease record it applied in this run. */
  ack(holder: string, seq: number, mark: LeaseMark | undefined): void;
}

/** The longest a closing holder waits for its release to be stored. */
const RELEASE_WAIT_MS = 500;

/**
 * Follows a notice channel's stream with an ordered consumer (nats.js: ephemeral, no acks,
 * re-created from the next sequence when it misses a message or its heartbeats), starting after
 * the stream's last sequence as the stream leader tells it. A start, a reconnect (the loop starts
 * over at the stream's new end), a re-created consumer or a gap in the sequences calls `onReset`.
 *
 * With a lease (a follower the bus hands out), while following it appends a grant every
 * {@link LEASE_RENEW_MS} and tells the announcers, once per turn of the event loop, the sequence
 * it has applied: `current()` holds while a grant it applied runs (docs/architecture.md, "Change
 * notices and the gateway's read cache"). A barrier asks the leader for the last sequence and
 * waits until this follower has applied it: the fallback while it holds no lease.
 */
export class NatsFollower {
  private readonly applied = new AppliedSequence();
  /** A consumer is delivering and `applied` counts from its start. */
  private following = false;
  private closing = false;
  private readonly closed = signal();
  private stopCurrent: (() => void) | undefined;
  private readonly done: Promise<void>;
  private readonly stream: string;
  private ackQueued = false;
  /** This run's lease holder (with a lease). */
  private holder: LeaseHolder | undefined;
  /** Runs of the consumer started (a replay's end is told only to the run that read it). */
  private runs = 0;
  /** The last notice this run applied (a barrier's answer below it: the stream was made again). */
  private lastNotice = 0;
  /** The last lease record this run applied: an announcer's mark, sent with each ack. */
  private lastLease: LeaseMark | undefined;

  constructor(
    private readonly bus: BusContext,
    private readonly channel: string,
    private readonly ensure: () => Promise<void>,
    private readonly streamEnd: (channel: string) => Promise<number>,
    private readonly handlers: FollowHandlers,
    private readonly hooks: FollowerHooks = {},
    private readonly lease?: FollowerLease,
  ) {
    this.stream = noticeStream(channel).stream;
    this.done = this.run();
  }

  async close(): Promise<void> {
    // No read is answered under the lease from here: the release may be appended.
    this.holder?.end();
    this.closing = true;
    this.following = false;
    this.closed.resolve();
    this.stopCurrent?.();
    this.applied.abandon();
    if (this.lease && this.holder) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.lease.append({ holder: this.holder.id, released: true }).catch(() => {}),
        new Promise((resolve) => {
          timer = setTimeout(resolve, RELEASE_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    await this.bus.whileUp(() => this.done);
  }

  /**
   * True while this follower holds a lease: every notice announced so far is applied, or its
   * announce waits for this follower.
   */
  current(): boolean {
    return this.following && this.holder?.valid === true;
  }

  /** The stream's last sequence, as its leader answers. */
  private lastSequence(lost: Promise<void>): Promise<number> {
    return unlessLost(this.streamEnd(this.channel), lost, `notices ${this.channel}`);
  }

  async barrier(): Promise<boolean> {
    if (!this.following) return false;
    const until = Date.now() + NOTICE_BARRIER_WAIT_MS;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), NOTICE_BARRIER_WAIT_MS);
    });
    try {
      const last = await Promise.race([this.lastSequence(this.bus.link.lost()), late]);
      if (last === undefined || !this.following) return false;
      if (last < this.lastNotice) {
        // The stream was made again and its sequences started over: follow it from its new end.
        this.stopCurrent?.();
        return false;
      }
      return await this.applied.reach(last, until - Date.now());
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Tells the announcers what this follower applied, once per turn of the event loop. */
  private queueAck(): void {
    if (!this.lease || this.ackQueued) return;
    this.ackQueued = true;
    setImmediate(() => {
      this.ackQueued = false;
      if (this.following && this.holder) this.lease?.ack(this.holder.id, this.applied.value, this.lastLease);
    });
  }

  /** Asks for a grant now and every {@link LEASE_RENEW_MS} while following; returns the stop. */
  private renewing(): () => void {
    const lease = this.lease;
    if (!lease) return () => {};
    const earlier = this.holder;
    const holder = lease.holder();
    this.holder = holder;
    if (earlier) {
      // The earlier run's holder answers nothing any more: its announcers need not wait for it.
      earlier.end();
      lease.append({ holder: earlier.id, released: true }).catch(() => {});
    }
    const ask = () => {
      if (!this.following) return;
      lease.append(holder.ask()).catch((err: unknown) => {
        // The lease runs out: reads wait for a barrier meanwhile.
        if (this.following) this.bus.log.warn({ err, channel: this.channel }, "read lease not renewed");
      });
    };
    ask();
    const timer = setInterval(ask, LEASE_RENEW_MS);
    return () => clearInterval(timer);
  }

  /** Like `NatsConsumer.run`: only while connected, starting over (and so resetting) at each reconnect. */
  private async run(): Promise<void> {
    while (!this.closing) {
      await Promise.race([this.bus.link.whenUp(), this.closed.promise]);
      if (this.closing) return;
      const lost = this.bus.link.lost();
      const what = `notices ${this.channel}`;
      let stopRenewing = () => {};
      let consumer: Consumer | undefined;
      const run = ++this.runs;
      try {
        await unlessLost(this.ensure(), lost, what);
        // Not known, or the question failed: the follower starts at the end.
        const replay = this.hooks.replayable
          ? await unlessLost(this.hooks.replayable(), lost, what).catch(() => undefined)
          : undefined;
        const from = replay
          ? { seq: 0 }
          : this.hooks.startAt
            ? await unlessLost(this.hooks.startAt(), lost, what)
            : { seq: await this.lastSequence(lost) };
        const start = from.seq;
        const only = this.hooks.only;
        consumer = await unlessLost(
          this.bus.js.consumers.get(this.stream, {
            deliver_policy: DeliverPolicy.StartSequence,
            opt_start_seq: start + 1,
            ...(only ? { filterSubjects: only } : {}),
          }),
          lost,
          what,
        );
        const messages = await unlessLost(consumer.consume({ max_messages: 256 }), lost, what);
        this.stopCurrent = () => messages.stop();
        if (this.closing) messages.stop();
        void lost.then(() => messages.stop());
        void (async () => {
          for await (const status of await messages.status())
            if (status.type === ConsumerEvents.OrderedConsumerRecreated) {
              this.handlers.onReset();
              // Re-created from where it was, perhaps in a stream made again: an announcer's
              // follower starts over at the stream's end (and counts a lease blind) instead.
              if (only) messages.stop();
            }
        })().catch(() => {});
        this.applied.restart(start);
        this.lastNotice = 0;
        this.lastLease = undefined;
        this.handlers.onReset();
        this.hooks.onStart?.(replay !== undefined, from.mark);
        this.following = !this.closing;
        this.queueAck();
        stopRenewing = this.renewing();
        let replaying = replay;
        if (replaying && replaying.end === 0) {
          this.caughtUp(run, replaying);
          replaying = undefined;
        }
        for await (const m of messages) {
          const seq = m.info.streamSequence;
          if (seq <= this.applied.value) continue;
          // A filtered follower's sequences skip the notices: a gap there says nothing (a lease
          // record aged out is an hour old, its grant long run out).
          if (!only && seq !== this.applied.value + 1) {
            // A gap (notices aged out before they came): what they said is unknown.
            this.handlers.onReset();
            replaying = undefined;
          }
          this.apply(seq, m);
          this.queueAck();
          if (replaying && seq >= replaying.end) {
            this.caughtUp(run, replaying);
            replaying = undefined;
          }
        }
      } catch (err) {
        if (this.closing) return;
        if (!(err instanceof BusUnavailableError)) {
          this.bus.log.error({ err, channel: this.channel }, "following notices failed; retrying");
          await Promise.race([new Promise((r) => setTimeout(r, 1_000)), this.closed.promise]);
        }
      } finally {
        stopRenewing();
        this.following = false;
        this.applied.abandon();
        this.hooks.onStop?.();
        // The server keeps an ordered consumer 5 min after its last pull unless it is deleted. Not
        // waited for: the run that lost its link starts over as soon as it is back, and a close's
        // request goes out before the connection drains.
        void consumer?.delete().catch(() => {});
      }
    }
  }

  /**
   * A replay reached its end: told once the stream proves to be the one it read (not made again
   * meanwhile), if this run still follows.
   */
  private caughtUp(run: number, replay: Replay): void {
    const stillFirst = this.hooks.stillFirst;
    if (!stillFirst) return;
    void stillFirst(replay.created)
      .catch(() => false)
      .then((same) => {
        if (same && run === this.runs && this.following) this.hooks.onCaughtUp?.();
      });
  }

  /** Applies the message `seq`: a lease record (a header, no body) or a notice for the handlers. */
  private apply(seq: number, m: JsMsg): void {
    const lease = m.headers?.get(LEASE_HEADER);
    if (lease) {
      const record = decodeLeaseRecord(lease);
      if (record && "grant" in record && record.holder === this.holder?.id) this.holder.applied(record.grant);
      this.applied.advance(seq);
      this.lastLease = { seq, record: lease.trim() };
      this.hooks.onRecord?.(seq, record, this.lastLease.record);
      return;
    }
    this.lastNotice = seq;
    let payloads: unknown[];
    try {
      const payload = decodeJson(m.data);
      const count = m.headers?.get(NOTICE_COUNT_HEADER);
      if (!count) payloads = [payload];
      else if (Array.isArray(payload) && payload.length === Number(count)) payloads = payload;
      else throw new Error(`${NOTICE_COUNT_HEADER}: ${count}, not the number of notices in the message`);
    } catch (err) {
      // An unreadable notice could be about anything.
      this.bus.log.error({ err, channel: this.channel, seq }, "unreadable notice");
      this.handlers.onReset();
      this.applied.advance(seq);
      return;
    }
    for (const payload of payloads) {
      try {
        this.handlers.onNotice(payload);
      } catch (err) {
        this.bus.log.error({ err, channel: this.channel, seq }, "notice handler failed");
      }
    }
    this.applied.advance(seq);
  }
}
