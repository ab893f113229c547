/**
 * The notice channels on NATS: their streams, announcing on them (a turn's notices stored together, waiting
 * for the lease holders) and following them.
 */
import { randomUUID } from "node:crypto";
import { NatsError, nanos, type StreamInfo } from "nats";
import { decodeJson, encodeJson } from "../json.ts";
import { jsonCodec, KvRecords } from "../kv-records.ts";
import {
  NOTICE_BARRIER_WAIT_MS,
  NOTICE_BATCH_MAX,
  NOTICE_COUNT_HEADER,
  NOTICE_MAX_AGE_MS,
  NOTICE_MAX_MSGS,
} from "../notices.ts";
import type { Follower, FollowHandlers } from "../port.ts";
import {
  encodeLeaseRecord,
  LEASE_HEADER,
  LeaseHolder,
  type LeaseMark,
  type LeaseRecord,
  LeaseTable,
  realTimers,
} from "../read-leases.ts";
import type { BusContext } from "./context.ts";
import { NO_MESSAGE_FOUND, rethrowUnreachable } from "./errors.ts";
import { NatsFollower, noticeStream, type Replay } from "./follower.ts";
import { headersOfText } from "./headers.ts";
import { unlessLost } from "./link.ts";
import { EMPTY, type PubAck, publishToStream, type ReplyInbox } from "./reply-inbox.ts";

/**
 * The most records an announcer's follower reads back from a notice stream's first one when it
 * starts (a few minutes of a few gateways' grants); past that it starts at the end.
 */
const REPLAY_MAX_RECORDS = 10_000;
/** Each notice channel's first stream (its `created`), by channel. */
const NOTICE_STREAMS_BUCKET = "notice_streams";

/** An answer of the JetStream API on a notice stream: a message get's, or a stream info's. */
interface NoticeApiAnswer {
  message?: { seq?: unknown; hdrs?: unknown };
  state?: { last_seq?: unknown };
  error?: { err_code?: number; description?: string };
}

/** Appends a lease record to a notice channel's stream (a header, no body), under its lease subject. */
function appendLeaseRecord(replies: ReplyInbox, channel: string, record: LeaseRecord): Promise<unknown> {
  const { stream, lease } = noticeStream(channel);
  return publishToStream(
    replies,
    lease,
    EMPTY,
    { [LEASE_HEADER]: encodeLeaseRecord(record) },
    {
      expectStream: stream,
    },
  );
}

/**
 * The bus's notice channels (`MessageBus.announce` and `follow`): each channel's stream, made
 * sure of once, the notices of one turn stored together, the followers, and the lease table of
 * the channels this bus announces on.
 */
export class NoticeChannels {
  /** Each notice channel's first stream, by its creation time (`created`), by channel. */
  private readonly firstStreams: KvRecords<string>;

  constructor(private readonly bus: BusContext) {
    this.firstStreams = new KvRecords(
      bus,
      NOTICE_STREAMS_BUCKET,
      jsonCodec((parsed) => (typeof parsed === "string" ? parsed : undefined)),
    );
  }

  /** Notice channels whose stream this bus has made sure of. */
  private readonly noticeStreams = new Map<string, Promise<void>>();

  private ensureNotices = (channel: string): Promise<void> => {
    let ensured = this.noticeStreams.get(channel);
    if (!ensured) {
      // Its followers and announcers all make sure of it; whichever comes first makes it. Its first
      // stream is recorded before anyone follows it (a follower could hold a lease on it).
      const { stream, subject, lease } = noticeStream(channel);
      ensured = this.bus.streams
        .ensure(stream, {
          subjects: [subject, lease],
          max_age: nanos(NOTICE_MAX_AGE_MS),
          max_msgs: NOTICE_MAX_MSGS,
        })
        .then(() => this.recordFirstStream(channel));
      // A failure is tried again by the next call.
      ensured.catch(() => this.noticeStreams.delete(channel));
      this.noticeStreams.set(channel, ensured);
    }
    return ensured;
  };

  /** Per channel, the notices announced in this turn of the event loop, stored together after it. */
  private readonly noticeBatches = new Map<string, { payloads: unknown[]; stored: Promise<void> }>();

  /**
   * The notices announced in one turn of the event loop on a channel are stored as one message
   * (up to {@link NOTICE_BATCH_MAX}; `Notice-Count` and their array when more than one), and each
   * announce resolves with it: one append, one ack and one delivery to each follower for the
   * writes a group commit answered together, instead of one each.
   */
  async announce(channel: string, payload: unknown): Promise<void> {
    this.bus.reachable(`announce ${channel}`);
    let batch = this.noticeBatches.get(channel);
    if (!batch || batch.payloads.length >= NOTICE_BATCH_MAX) {
      const payloads: unknown[] = [];
      const stored = new Promise<void>((next) => setImmediate(next)).then(() => {
        if (this.noticeBatches.get(channel)?.payloads === payloads) this.noticeBatches.delete(channel);
        return this.storeNotices(channel, payloads);
      });
      batch = { payloads, stored };
      this.noticeBatches.set(channel, batch);
    }
    batch.payloads.push(payload);
    return batch.stored;
  }

  private async storeNotices(channel: string, payloads: unknown[]): Promise<void> {
    const { stream, subject } = noticeStream(channel);
    const what = `announce ${channel}`;
    this.bus.reachable(what);
    const leases = this.leaseTable(channel);
    const lost = this.bus.link.lost();
    const sentAt = performance.now();
    const [data, headers] =
      payloads.length === 1
        ? [encodeJson(payloads[0]), undefined]
        : [encodeJson(payloads), { [NOTICE_COUNT_HEADER]: String(payloads.length) }];
    const store = async () => {
      await this.ensureNotices(channel);
      return publishToStream(this.bus.replies, subject, data, headers, { expectStream: stream });
    };
    let stored: PubAck;
    try {
      stored = await unlessLost(store(), lost, what);
    } catch (error) {
      if (!(error instanceof NatsError && error.code === "503")) rethrowUnreachable(error, what);
      // No stream answered: deleted since it was made sure of. Made again, once.
      this.noticeStreams.delete(channel);
      stored = await unlessLost(store(), lost, what).catch((again: unknown) =>
        rethrowUnreachable(again, what),
      );
    }
    // Every lease holder that could answer without it has applied it (or its lease ran out).
    await leases.table.settled(stored.seq, sentAt);
  }

  /** Records the channel's stream as its first, unless one is recorded already (never changed). */
  private async recordFirstStream(channel: string): Promise<void> {
    const { stream } = noticeStream(channel);
    const [info] = await Promise.all([this.bus.jsm.streams.info(stream), this.firstStreams.open()]);
    await this.firstStreams.create(channel, info.created);
  }

  /**
   * Where an announcer's follower that starts now can read every grant stored before it: the
   * stream's last lease record, when the stream still holds every record it was ever given (from
   * sequence 1, at most {@link REPLAY_MAX_RECORDS}) and is the channel's first stream (so no
   * follower can hold a lease from a stream made before it, unseen); else undefined (it starts at
   * the end, and counts a lease blind).
   */
  private replayableEnd = async (channel: string): Promise<Replay | undefined> => {
    const info = await this.firstStreamInfo(channel);
    if (!info) return undefined;
    const { first_seq: first, last_seq: last } = info.state;
    if (first > 1 || last > REPLAY_MAX_RECORDS) return undefined;
    return { end: (await this.lastLease(channel))?.seq ?? 0, created: info.created };
  };

  /** The stream's info, if it is the channel's first stream (as recorded); else undefined. */
  private firstStreamInfo = async (channel: string): Promise<StreamInfo | undefined> => {
    const { stream } = noticeStream(channel);
    const [info, first] = await Promise.all([
      this.bus.jsm.streams.info(stream),
      this.firstStreams.get(channel),
    ]);
    return first !== undefined && first.value === info.created ? info : undefined;
  };

  /** Per channel announced on: its lease holders, as this bus's own follower of it and their acks tell. */
  private readonly leaseTables = new Map<string, { id: string; table: LeaseTable }>();

  private leaseTable(channel: string): { id: string; table: LeaseTable } {
    const known = this.leaseTables.get(channel);
    if (known) return known;
    const leases = new LeaseTable(
      () => performance.now(),
      realTimers,
      () => this.lastLease(channel),
    );
    const id = randomUUID();
    this.leaseTables.set(channel, { id, table: leases });
    const follower = new NatsFollower(
      this.bus,
      channel,
      () => this.ensureNotices(channel),
      this.lastSequence,
      { onNotice: () => {}, onReset: () => {} },
      {
        // Its lease records only: an announcer's follower never reads a notice.
        only: noticeStream(channel).lease,
        startAt: async () => {
          const mark = await this.lastLease(channel);
          return { seq: mark?.seq ?? 0, mark };
        },
        replayable: () => this.replayableEnd(channel),
        stillFirst: async (created) => (await this.firstStreamInfo(channel))?.created === created,
        onStart: (replaying, mark) => leases.restart(replaying, mark),
        onCaughtUp: () => leases.caughtUp(),
        onRecord: (seq, record, stored) => leases.record(seq, record, stored),
        onStop: () => leases.stopped(),
      },
    );
    const acks = this.bus.nc.subscribe(noticeStream(channel).applied, {
      callback: (error, msg) => {
        if (error) return;
        try {
          const ack = decodeJson(msg.data) as { holder?: unknown; seq?: unknown; lease?: unknown };
          if (typeof ack.holder !== "string" || typeof ack.seq !== "number") return;
          const [seq, record] = Array.isArray(ack.lease) ? ack.lease : [];
          leases.acked(
            ack.holder,
            ack.seq,
            typeof seq === "number" && typeof record === "string" ? { seq, record } : undefined,
          );
        } catch {
          // Not an ack: ignored (the holder's lease runs out instead).
        }
      },
    });
    this.bus.register({
      close: async () => {
        acks.unsubscribe();
        await follower.close();
      },
    });
    return { id, table: leases };
  }

  /** A JetStream API request on a notice channel's stream, through the bus's own reply inbox. */
  private async askNotices(api: string, body: Uint8Array): Promise<NoticeApiAnswer> {
    return decodeJson(
      await this.bus.replies.request(api, body, undefined, NOTICE_BARRIER_WAIT_MS),
    ) as NoticeApiAnswer;
  }

  /**
   * A notice channel's last notice's sequence, asked of its stream's leader (JetStream's message
   * get, which only the leader answers; a direct get may come from a replica behind): lease
   * records, on a subject of their own, after it need no follower's wait. The stream's last
   * sequence (its info, also the leader's only) when it holds no notice (every one aged out),
   * asked only then as it answers with three times the bytes and costs the servers more. Through
   * the bus's own reply inbox, not nats.js's JetStream manager: it is on the read cache's hot path.
   */
  private lastSequence = async (channel: string): Promise<number> => {
    const { stream, subject } = noticeStream(channel);
    this.bus.reachable(`notices ${stream}`);
    const last = await this.askNotices(
      `$JS.API.STREAM.MSG.GET.${stream}`,
      encodeJson({ last_by_subj: subject }),
    );
    if (typeof last.message?.seq === "number") return last.message.seq;
    if (last.error?.err_code !== NO_MESSAGE_FOUND)
      throw new Error(`last notice of ${stream}: ${last.error?.description ?? "no message"}`);
    return this.streamEnd(channel);
  };

  /** A notice channel's stream's last sequence (notice or lease record), asked of its leader. */
  private streamEnd = async (channel: string): Promise<number> => {
    const { stream } = noticeStream(channel);
    this.bus.reachable(`notices ${stream}`);
    const info = await this.askNotices(`$JS.API.STREAM.INFO.${stream}`, EMPTY);
    if (typeof info.state?.last_seq !== "number")
      throw new Error(`stream info ${stream}: ${info.error?.description ?? "no state"}`);
    return info.state.last_seq;
  };

  /**
   * A notice channel's last lease record (null: it holds none), asked of its stream's leader: an
   * announcer's mark for the notices stored before it asked (`LeaseTable`).
   */
  private lastLease = async (channel: string): Promise<LeaseMark | null> => {
    const { stream, lease } = noticeStream(channel);
    this.bus.reachable(`notices ${stream}`);
    const last = await this.askNotices(
      `$JS.API.STREAM.MSG.GET.${stream}`,
      encodeJson({ last_by_subj: lease }),
    );
    if (typeof last.message?.seq === "number") {
      const record = headersOfText(Buffer.from(String(last.message.hdrs ?? ""), "base64").toString("latin1"))[
        LEASE_HEADER
      ];
      if (record === undefined) throw new Error(`last lease record of ${stream}: no ${LEASE_HEADER}`);
      return { seq: last.message.seq, record };
    }
    if (last.error?.err_code !== NO_MESSAGE_FOUND)
      throw new Error(`last lease record of ${stream}: ${last.error?.description ?? "no message"}`);
    return null;
  };

  follow(channel: string, handlers: FollowHandlers): Follower {
    const follower = new NatsFollower(
      this.bus,
      channel,
      () => this.ensureNotices(channel),
      this.lastSequence,
      handlers,
      // It reads the whole stream, from its end: notices and lease records in their one order.
      { startAt: async () => ({ seq: await this.streamEnd(channel) }) },
      {
        holder: () => new LeaseHolder(randomUUID(), () => performance.now()),
        append: (record) => appendLeaseRecord(this.bus.replies, channel, record),
        ack: (holder, seq, mark) => {
          if (!this.bus.connected()) return;
          const ack = mark ? { holder, seq, lease: [mark.seq, mark.record] } : { holder, seq };
          this.bus.nc.publish(noticeStream(channel).applied, encodeJson(ack));
        },
      },
    );
    const closable = this.bus.register({ close: () => follower.close() });
    return {
      close: () => closable.close(),
      barrier: () => follower.barrier(),
      current: () => follower.current(),
    };
  }
}
