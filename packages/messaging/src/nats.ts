import { randomUUID } from "node:crypto";
import {
  AckPolicy,
  type ApiError,
  type ConsumerConfig,
  ConsumerEvents,
  type ConsumerInfo,
  connect,
  createInbox,
  DeliverPolicy,
  ErrorCode,
  Events,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type KV,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  NatsError,
  nanos,
  headers as natsHeaders,
  nkeyAuthenticator,
  StorageType,
  type StreamConfig,
  type StreamInfo,
} from "nats";
import { askAgain } from "./ask-again.ts";
import { pastDeadline, withDeadline } from "./deadline.ts";
import {
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_DEAD_LETTER_AFTER_MS,
  DEFAULT_MAX_REDELIVERY_DELAY_MS,
  failureText,
  noStreamFor,
  redeliveryDelayMs,
  workingIntervalMs,
} from "./delivery.ts";
import { decodeJson, encodeJson, encodePassedReply, splitPassedReply } from "./json.ts";
import { type BusLogger, consoleLogger } from "./log.ts";
import {
  AppliedSequence,
  NOTICE_BARRIER_WAIT_MS,
  NOTICE_BATCH_MAX,
  NOTICE_COUNT_HEADER,
  NOTICE_MAX_AGE_MS,
  NOTICE_MAX_MSGS,
} from "./notices.ts";
import {
  BusUnavailableError,
  type Closable,
  type ConsumeOptions,
  type Consumer,
  closedForRequests,
  type DeadLetter,
  type DeadLetterListener,
  type DeadLetterPage,
  type DeadLetters,
  type DeliveredEvent,
  type Follower,
  type FollowHandlers,
  type Headers,
  type IntegrationEvent,
  type KeyValue,
  KvBucketMissingError,
  KvConflictError,
  type KvOptions,
  type MessageBus,
  NoRespondersError,
  PassedReply,
  RemoteError,
  type ReplyEnvelope,
  type RequestHandler,
  type RequestOptions,
  RequestTimeoutError,
  toErrorReply,
} from "./port.ts";
import {
  decodeLeaseRecord,
  encodeLeaseRecord,
  LEASE_HEADER,
  LEASE_RENEW_MS,
  LeaseHolder,
  type LeaseMark,
  type LeaseRecord,
  LeaseTable,
  realTimers,
} from "./read-leases.ts";
import { assertKvBucket, assertKvKey, assertNoticeChannel, subjectMatches } from "./subjects.ts";

export interface NatsBusOptions {
  /** One server, or several of one cluster (the client picks one and fails over to the others). */
  url: string | string[];
  /** Connection name, shown by the server (`nats server report connections`). */
  name: string;
  /** JetStream stream holding `events.>`; created or updated at connect. */
  eventsStream?: string;
  /** Publishing the same event id again within this window stores it once (at most `eventsMaxAgeMs`). */
  duplicateWindowMs?: number;
  /**
   * Copies JetStream keeps of `EVENTS` and of every key-value bucket, each on another server of
   * the cluster (1 by default; more than 1 needs a clustered server). A stream or bucket made
   * with another count is updated to this one.
   */
  replicas?: number;
  /** `EVENTS` keeps an event this long at most (see {@link DEFAULT_EVENTS_MAX_AGE_MS}). */
  eventsMaxAgeMs?: number;
  /** `EVENTS` holds this many bytes at most, dropping its oldest events past it. */
  eventsMaxBytes?: number;
  /** The nkey seed of the identity it connects as (`SU…`, `permissions.ts`); unset: none. */
  nkeySeed?: Uint8Array;
  /** A consumer's default `deadLetterAfterMs` (24 h). */
  deadLetterAfterMs?: number;
  onDeadLetter?: DeadLetterListener;
  logger?: BusLogger;
}

/**
 * How long `EVENTS` keeps an integration event: a week, so a consumer down over a long weekend
 * still finds every event it missed. Consumers take an event within seconds; the age limit is
 * what bounds the stream's disk while they keep up. A consumer that falls behind it skips the
 * events removed (the server moves it to the stream's first event); they stay in the publishing
 * service's event store, but are not handled.
 */
export const DEFAULT_EVENTS_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** The most bytes `EVENTS` holds (1 GiB, about two million events); past it the oldest go. */
export const DEFAULT_EVENTS_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * NATS refused the connection: its credentials are missing, unknown or not allowed. A
 * configuration mistake, not an outage: retrying cannot help.
 */
export class BusAuthorizationError extends Error {
  override readonly name = "BusAuthorizationError";
  constructor(cause: unknown) {
    super(`NATS refused the connection's credentials: ${(cause as Error).message}`);
    this.cause = cause;
  }
}

/**
 * The replica count asked of JetStream (`NatsBusOptions.replicas`) is one the server cannot
 * give: more than 1 on a server that is not part of a cluster, or more than the cluster has
 * JetStream servers. A configuration mistake, not an outage: retrying cannot help.
 */
export class ReplicasRefusedError extends Error {
  override readonly name = "ReplicasRefusedError";
  constructor(
    readonly replicas: number,
    reason: string,
  ) {
    super(`JetStream cannot keep ${replicas} replicas: ${reason}`);
  }
}

/** Carries the event id next to `Nats-Msg-Id`, which the server may strip on republish. */
const EVENT_ID_HEADER = "x-event-id";
/**
 * How often a key-value request answered "no responders" is asked in all, and the pause between
 * (nats.js's own pause for a JetStream publish it retries); see `NatsKeyValue.answered`.
 */
const KV_NO_RESPONDERS_TRIES = 5;
const KV_NO_RESPONDERS_RETRY_MS = 250;
/**
 * The JetStream API error codes of "wrong last sequence": a KV compare-and-set lost. 10071 names
 * the key's current sequence. 10164 names none: a replicated stream (nats-server 2.11 on) gives it
 * when another write expecting a sequence of the same key is still in flight, as when two
 * replicas record the same key at once. nats.js 2.29 knows only the first.
 */
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);
const STREAM_NOT_FOUND = 10059;
/** A message refused because another publish of its id is still in flight (a replicated stream). */
const DUPLICATE_IN_PROCESS = 10158;
const CONSUMER_NOT_FOUND = 10014;
/** A consumer's create refused: one of that name exists with another configuration (2.10 on). */
const CONSUMER_EXISTS = 10148;
/** `add` refused while another's `add` of the same stream is under way. */
const STREAM_NAME_IN_USE = 10058;
const SUBJECTS_OVERLAP = 10065;
/**
 * What JetStream answers a replica count it cannot give: "replicas > 1 not supported in
 * non-clustered mode", "insufficient resources" and "no suitable peers for placement" (fewer
 * servers than replicas; the first on creation, the second on an update).
 */
const REPLICAS_NOT_SUPPORTED = 10074;
const INSUFFICIENT_RESOURCES = 10023;
const NO_PEERS_FOR_PLACEMENT = 10005;
const EMPTY = new Uint8Array(0);
/** The JetStream ack payload, and how an unconfirmed ack is retried (see `confirmAck`). */
const ACK = new TextEncoder().encode("+ACK");
const ACK_CONFIRM_TIMEOUT_MS = 1_000;
const ACK_RETRY_MS = 250;
/** A pull request's lifetime; see `NatsConsumer.run`. */
const PULL_EXPIRES_MS = 5_000;
/**
 * A reply larger than the server's `max_payload` (1 MiB by default) travels in parts of at most
 * that size less {@link PART_HEADROOM} (room for the part header), each marked `<n>/<count>` in
 * this header; the caller's {@link ReplyInbox} joins them. A reply that fits goes as one message
 * without the header, so small replies pay nothing for it.
 */
const REPLY_PART_HEADER = "x-reply-part";
const PART_HEADROOM = 1_024;
/** nats-server's default `max_payload`, for a connection that has not told its own yet. */
const DEFAULT_MAX_PAYLOAD = 1_048_576;
/** Client error codes that mean the server is out of reach, not that the operation was wrong. */
const UNREACHABLE = new Set(["TIMEOUT", "503", "DISCONNECT", "CONNECTION_CLOSED", "CONNECTION_REFUSED"]);

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** An already resolved {@link signal}. */
function resolved(): { promise: Promise<void>; resolve: () => void } {
  const s = signal();
  s.resolve();
  return s;
}

/** The connection's state as a loop sending to JetStream waits on it (see `NatsBus.link`). */
interface Link {
  whenUp(): Promise<void>;
  lost(): Promise<void>;
}

/**
 * `work`'s outcome, unless the connection drops first: then a {@link BusUnavailableError} at once.
 * A JetStream request in flight at a disconnect gets no reply (nats.js drops what it had not
 * sent, and the server that had it is gone) and would wait for its whole time-out.
 */
function unlessLost<T>(work: Promise<T>, lost: Promise<void>, what: string): Promise<T> {
  work.catch(() => {}); // abandoned on a disconnect; its late failure is of no interest
  return Promise.race([
    work,
    lost.then(() => {
      throw disconnected(what);
    }),
  ]);
}

/** What an operation attempted while the connection is down fails with. */
function disconnected(what: string): BusUnavailableError {
  return new BusUnavailableError(`${what}: not connected (reconnecting)`);
}

/** Rethrows a NATS error that means "server out of reach" as {@link BusUnavailableError}. */
function rethrowUnreachable(error: unknown, what: string): never {
  if (error instanceof NatsError && UNREACHABLE.has(error.code)) throw new BusUnavailableError(what, error);
  throw error;
}

export async function connectNatsBus(options: NatsBusOptions): Promise<MessageBus> {
  // Reconnect for ever, trying every 0.5 to 1 s (the client's default is 2 s): after a NATS
  // restart the services answer again within about a second.
  const nc = await connect({
    // A cluster's nodes: the client picks one at random and fails over to the others.
    servers: options.url,
    name: options.name,
    ...(options.nkeySeed ? { authenticator: nkeyAuthenticator(options.nkeySeed) } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    reconnectJitter: 500,
    // A server cut off (a partition, a dead host: no FIN, no RST) is noticed when two PINGs go
    // unanswered: within ~9 s, then the client moves to another node of the cluster. The client's
    // default (2 min, 2 PINGs) leaves a service on a silent node for up to 4 min, and TCP's own
    // retransmission back-off can hold it ~10 s more after the link heals.
    pingInterval: 3_000,
    maxPingOut: 2,
    // A node that does not answer a connection attempt (cut off) is given up after 3 s for the
    // next one, not the client's default 20 s.
    timeout: 3_000,
    // No stack captured per request for a timeout that rarely comes: our own requests, JetStream
    // publishes and ack confirmations use the bus's reply inbox (ReplyInbox), but JetStream's
    // other requests (consumers, key-value, stream management) still go through nats.js's.
    noAsyncTraces: true,
  }).catch((error) => {
    if (error instanceof NatsError && /^(AUTHORIZATION_VIOLATION|AUTHENTICATION_)/.test(error.code))
      throw new BusAuthorizationError(error);
    throw error;
  });
  try {
    coalesceWrites(nc); // inside: should it throw, the connection is closed, not left open
    const log = options.logger ?? consoleLogger;
    const jsm = await untilAnswered("JetStream", log, () => nc.jetstreamManager());
    const stream = options.eventsStream ?? "EVENTS";
    const streams = new StreamSettings(nc, jsm, options.replicas ?? 1, log);
    const maxAgeMs = options.eventsMaxAgeMs ?? DEFAULT_EVENTS_MAX_AGE_MS;
    await streams.ensure(stream, {
      subjects: ["events.>"],
      // The server refuses a duplicate window longer than the stream's age limit.
      duplicate_window: nanos(Math.min(options.duplicateWindowMs ?? 3_600_000, maxAgeMs)),
      max_age: nanos(maxAgeMs),
      max_bytes: options.eventsMaxBytes ?? DEFAULT_EVENTS_MAX_BYTES,
    });
    const js = nc.jetstream();
    const replies = new ReplyInbox(nc);
    const letters = new NatsDeadLetters(jsm, replies, streams, {
      afterMs: options.deadLetterAfterMs ?? DEFAULT_DEAD_LETTER_AFTER_MS,
      ...(options.onDeadLetter ? { listener: options.onDeadLetter } : {}),
    });
    return new NatsBus(nc, jsm, js, replies, stream, streams, log, letters);
  } catch (error) {
    await nc.close();
    throw error;
  }
}

/** The part of nats.js's protocol handler that `coalesceWrites` changes (not in its public types). */
interface ProtocolWrites {
  flushPending(): void;
  outbound: { size(): number };
  pendingLimit: number;
}

/**
 * Sends what the connection has to send once per turn of the event loop instead of once per
 * callback: nats.js flushes its outbound buffer in a microtask after each publish, so every
 * HTTP request the gateway takes (and every reply a service sends), each handled in its own
 * callback, cost a socket write of its own, and nats-server a read and a wake-up. Deferred to
 * `setImmediate`, the requests and replies of one turn leave in one write, right after the
 * turn's I/O callbacks. A buffer past the client's own limit (32 KiB) is still written at once.
 * Throws when nats.js no longer has this shape, so an upgrade that changes it fails the tests.
 */
export function coalesceWrites(nc: NatsConnection): void {
  const protocol = (nc as NatsConnection & { protocol?: Partial<ProtocolWrites> }).protocol;
  if (
    typeof protocol?.flushPending !== "function" ||
    typeof protocol.outbound?.size !== "function" ||
    typeof protocol.pendingLimit !== "number"
  ) {
    throw new Error("nats.js's protocol handler changed: coalesceWrites cannot defer its flushes");
  }
  const handler = protocol as ProtocolWrites;
  const flushNow = handler.flushPending.bind(handler);
  let scheduled = false;
  handler.flushPending = () => {
    if (handler.outbound.size() >= handler.pendingLimit) return flushNow();
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flushNow();
    });
  };
}

/** The settings of a stream this bus makes sure of; `num_replicas` is added by {@link StreamSettings}. */
type WantedStream = Partial<
  Pick<StreamConfig, "subjects" | "duplicate_window" | "max_age" | "max_bytes" | "max_msgs">
>;

/** How long {@link StreamSettings.ensure} waits for a stream's leader (an election takes ~1 s). */
const LEADER_WAIT_MS = 30_000;

/**
 * A JetStream API request that makes or opens a stream, asked again while it times out, for up
 * to {@link LEADER_WAIT_MS}, each retry logged; any other failure is thrown at once. nats-server
 * answers nothing about a replicated stream just made (by another client) until its first leader
 * is elected: a second on a quiet cluster, past the request's 5 s time-out on a loaded one (a
 * service starting beside nine others on a fresh cluster once exited with that time-out). Nor
 * does a server that stalls. Each request asked again here is idempotent: an `add` of a stream
 * already made with the same settings answers it as it is. Still unanswered after that: a
 * {@link BusUnavailableError} (503).
 */
function untilAnswered<T>(what: string, log: BusLogger, ask: () => Promise<T>): Promise<T> {
  const timedOut = (error: unknown) => error instanceof NatsError && error.code === ErrorCode.Timeout;
  return askAgain(ask, {
    pauseMs: 100,
    forMs: LEADER_WAIT_MS,
    retryOn: timedOut,
    onRetry: () => log.warn({ what }, `${what}: JetStream did not answer in time; asking again`),
  }).catch((error: unknown) => {
    if (timedOut(error)) throw new BusUnavailableError(`${what}: no answer from JetStream`, error);
    throw error;
  });
}

/**
 * Makes the streams this bus relies on (`EVENTS`, each key-value bucket's `KV_<bucket>`) have
 * the replica count and limits configured: creates a stream that is missing, and updates one
 * made earlier with other settings (every setting here is one JetStream lets a stream change,
 * the replica count included on a clustered server), logging one line naming what it changed.
 */
class StreamSettings {
  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    readonly replicas: number,
    private readonly log: BusLogger,
  ) {}

  /**
   * Makes the stream, or brings an existing one to `wanted`, and returns once it has a leader:
   * a replicated stream just made (or just moved) has none for a moment, and a read or write
   * of it then waits for its whole time-out (a service starting on a fresh cluster failed its
   * first key-value read so, and exited).
   */
  ensure(name: string, wanted: WantedStream): Promise<void> {
    return afterRacedAdds(() => this.ensureOnce(name, wanted));
  }

  private async ensureOnce(name: string, wanted: WantedStream): Promise<void> {
    const config = { ...wanted, num_replicas: this.replicas };
    let info: StreamInfo;
    try {
      info = await untilAnswered(`stream ${name}`, this.log, () => this.jsm.streams.info(name));
    } catch (error) {
      if (apiErrorCode(error) !== STREAM_NOT_FOUND) throw error;
      this.assertClustered();
      // Several services may race to create it. An identical config makes `add` idempotent once
      // the stream exists, but while another's `add` is still under way the server may refuse
      // this one (subjects overlap, name in use): `ensure` then reads it again.
      await untilAnswered(`stream ${name}`, this.log, () =>
        this.jsm.streams.add({ name, storage: StorageType.File, ...config }),
      ).catch((refused) => this.rethrowRefused(refused));
      return this.led(name);
    }
    const current = info.config;
    const changes = Object.entries(config).flatMap(([key, value]) => {
      const was = current[key as keyof StreamConfig];
      return String(was) === String(value) ? [] : [`${key} ${shown(key, was)} → ${shown(key, value)}`];
    });
    if (changes.length > 0) {
      if (current.num_replicas !== config.num_replicas) this.assertClustered();
      await untilAnswered(`stream ${name}`, this.log, () =>
        this.jsm.streams.update(name, { ...current, ...config }),
      ).catch((e) => this.rethrowRefused(e));
      this.log.info({ stream: name, changes }, `stream ${name} updated: ${changes.join(", ")}`);
      return this.led(name);
    }
    // Unchanged and led already (the usual start): the info just read says so, no second ask.
    if (info.cluster?.leader || !this.nc.info?.cluster) return;
    return this.led(name);
  }

  /** Resolves once the stream has a leader (at once outside a cluster); else a 503 after a while. */
  private async led(name: string): Promise<void> {
    if (!this.nc.info?.cluster) return;
    await askAgain(
      async () => {
        const info = await this.jsm.streams.info(name).catch(() => undefined);
        if (!info?.cluster?.leader) throw new BusUnavailableError(`stream ${name} has no leader`);
      },
      { pauseMs: 100, forMs: LEADER_WAIT_MS, retryOn: (error) => error instanceof BusUnavailableError },
    );
  }

  /**
   * A server outside any cluster refuses to create a stream of more than one replica, but accepts
   * raising an existing stream's count and keeps one copy all the same (nats-server 2.9).
   */
  private assertClustered(): void {
    if (this.replicas > 1 && !this.nc.info?.cluster)
      throw new ReplicasRefusedError(this.replicas, "the NATS server is not part of a cluster");
  }

  rethrowRefused(error: unknown): never {
    const code = apiErrorCode(error);
    const tooFewServers = code === INSUFFICIENT_RESOURCES || code === NO_PEERS_FOR_PLACEMENT;
    if (code === REPLICAS_NOT_SUPPORTED || (tooFewServers && this.replicas > 1))
      throw new ReplicasRefusedError(this.replicas, (error as NatsError).message);
    throw error;
  }
}

/** The JetStream API error code a failed JetStream request carries (`err_code`), if any. */
function apiErrorCode(error: unknown): number | undefined {
  return error instanceof NatsError ? error.api_error?.err_code : undefined;
}

/**
 * Whether a stream's `add` was refused because another client's `add` of the same stream was
 * under way (subjects overlap, or its name in use): the stream exists now, or is about to.
 */
function lostRacedAdd(error: unknown): boolean {
  const code = apiErrorCode(error);
  return code === SUBJECTS_OVERLAP || code === STREAM_NAME_IN_USE;
}

/**
 * `make` (which reads the stream first, and adds it only when missing) asked again while its
 * `add` loses to another client's still under way: on a loaded cluster a stream being made can
 * stay unseen for more than one ask (a service starting beside nine others exited on the second
 * refusal). Within the leader wait; still refused after it, the refusal is thrown.
 */
function afterRacedAdds<T>(make: () => Promise<T>): Promise<T> {
  return askAgain(make, { pauseMs: 100, forMs: LEADER_WAIT_MS, retryOn: lostRacedAdd });
}

/** A stream setting as the log line shows it: durations in seconds, the rest as they are. */
function shown(key: string, value: unknown): string {
  if (value === undefined) return "unset";
  if ((key === "max_age" || key === "duplicate_window") && typeof value === "number")
    return `${value / 1e9}s`;
  return Array.isArray(value) ? value.join(",") : String(value);
}

/**
 * A notice channel's stream and its two subjects there: the announcers' notices (`subject`) and
 * the followers' read-lease records (`lease`), each appended by one side only, so that an
 * announcer's follower reads the lease records alone; and the subject its lease holders tell the
 * announcers on what they applied (`applied`: core NATS, not stored).
 */
function noticeStream(channel: string): { stream: string; subject: string; lease: string; applied: string } {
  assertNoticeChannel(channel);
  return {
    stream: `NOTICES_${channel}`,
    subject: `notices.${channel}`,
    lease: `notices.${channel}.lease`,
    applied: `notices.${channel}.applied`,
  };
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

class NatsBus implements MessageBus {
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly closables = new Set<Closable>();
  private closing: Promise<void> | undefined;
  /**
   * False from a disconnect until the client has reconnected. While it is false nothing is sent:
   * nats.js discards what was published while disconnected when it dials again (its outbound
   * buffer is reset per dial), so a request (ours, or JetStream's for a key-value read or an
   * event's publish) sent then would wait for its whole time-out, though the server is back
   * long before. Such a request fails at once with {@link BusUnavailableError} instead, and the
   * requests waiting at the disconnect fail with it too: their replies were lost with the link.
   */
  private connected = true;
  /** Resolved when the connection drops; a fresh one after each reconnect. */
  private down = signal();
  /** Resolved while connected (and once closed); a fresh, pending one from each disconnect. */
  private up = resolved();
  /** Handlers of {@link MessageBus.onConnectionChange}. */
  private readonly watchers = new Set<(connected: boolean) => void>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly replies: ReplyInbox,
    private readonly stream: string,
    private readonly streams: StreamSettings,
    private readonly log: BusLogger,
    private readonly letters: NatsDeadLetters,
  ) {
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === Events.Disconnect) {
          this.connected = false;
          this.up = signal();
          this.down.resolve();
          this.replies.failWaiting((subject) => disconnected(`request ${subject}`));
          this.tellWatchers(false);
        } else if (status.type === Events.Reconnect) {
          this.connected = true;
          this.down = signal();
          this.up.resolve();
          this.tellWatchers(true);
        } else if (status.type === Events.Error && status.data === ErrorCode.PermissionsViolation) {
          // This connection's identity may not use a subject it tried (permissions.ts): a
          // request so refused gets no answer. The server's log names the subject.
          this.log.error(
            { err: new Error(String(status.data)) },
            "NATS refused a subject this service's identity is not allowed",
          );
        }
      }
    })();
    void nc.closed().then(() => this.up.resolve());
  }

  /**
   * What a loop that talks to JetStream (a consumer's) needs to know of the connection: when it
   * is up (`whenUp`, at once if it is; also once closed) and when it drops next (`lost`, taken
   * while up: never, if it is already down).
   */
  private readonly link: Link = {
    whenUp: () => this.up.promise,
    lost: () => this.down.promise,
  };

  /** Throws {@link BusUnavailableError} while the connection is down (see `connected`). */
  private reachable = (what: string): void => {
    if (!this.connected) throw disconnected(what);
  };

  /**
   * Waits for what needs the server (a drain, a flush) while connected, and no longer once the
   * connection is down: it would finish only after a reconnect that may never come, and a
   * service stopping during an outage would wait for its whole stop deadline.
   */
  private whileUp = async (work: () => Promise<unknown>): Promise<void> => {
    if (!this.connected) return;
    await Promise.race([work().catch(() => {}), this.down.promise]);
  };

  async request(subject: string, payload: unknown, options: RequestOptions): Promise<unknown> {
    // Closed or closing: no reply could come back (and the inbox cannot subscribe on it).
    if (this.nc.isClosed() || this.nc.isDraining()) throw closedForRequests(subject);
    this.reachable(`request ${subject}`);
    const reply = await this.replies.request(
      subject,
      encodeJson(payload),
      withDeadline(options.headers, options.timeoutMs),
      options.timeoutMs,
    );
    const passed = splitPassedReply(reply);
    const envelope = parseEnvelope(passed ? passed.envelope : reply);
    if (!envelope) throw malformedReply(subject);
    if (!envelope.ok) throw new RemoteError(envelope.error);
    return passed ? new PassedReply(envelope.data, passed.body) : envelope.data;
  }

  serve(subject: string, options: { queue: string }, handler: RequestHandler): Closable {
    const mine = new Set<Promise<unknown>>();
    const sub = this.nc.subscribe(subject, {
      queue: options.queue,
      callback: (error, msg) => {
        if (error) return this.log.error({ err: error, subject }, "subscription failed");
        this.track(this.answer(msg, handler), mine);
      },
    });
    return this.register({
      close: async () => {
        if (!sub.isClosed()) await this.whileUp(() => sub.drain());
        await Promise.allSettled([...mine]);
      },
    });
  }

  private async answer(msg: Msg, handler: RequestHandler): Promise<void> {
    const headers = receivedHeaders(msg);
    if (pastDeadline(headers)) {
      // The caller has given up; its answer was a 503. Doing the work now would contradict it.
      this.log.warn({ subject: msg.subject }, "request arrived after its caller's deadline; not handled");
      return;
    }
    let reply: ReplyEnvelope;
    let payload: unknown;
    try {
      payload = decodeJson(msg.data);
    } catch {
      reply = toErrorReply({ status: 400, type: "bad_request", message: "request body is not valid JSON" });
      msg.respond(encodeJson(reply));
      return;
    }
    try {
      const data = await handler({ subject: msg.subject, payload, headers });
      reply = { ok: true, data };
    } catch (error) {
      if (!(error instanceof RemoteError))
        this.log.error({ err: error, subject: msg.subject }, "handler failed");
      reply = toErrorReply(error);
    }
    let body: Uint8Array;
    try {
      body =
        reply.ok && reply.data instanceof PassedReply
          ? encodePassedReply(reply.data.meta, reply.data.body)
          : encodeJson(reply);
    } catch (error) {
      this.log.error({ err: error, subject: msg.subject }, "reply is not serialisable");
      body = encodeJson(toErrorReply(error));
    }
    if (msg.reply) this.respond(msg, body);
  }

  /** Sends a reply, in parts when it exceeds the server's payload limit (see {@link REPLY_PART_HEADER}). */
  private respond(msg: Msg, body: Uint8Array): void {
    const limit = this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
    if (body.length <= limit) {
      msg.respond(body);
      return;
    }
    const size = limit - PART_HEADROOM;
    const count = Math.ceil(body.length / size);
    for (let part = 0; part < count; part++) {
      const headers = natsHeaders();
      headers.set(REPLY_PART_HEADER, `${part + 1}/${count}`);
      msg.respond(body.subarray(part * size, (part + 1) * size), { headers });
    }
  }

  async publish(event: IntegrationEvent): Promise<void> {
    const headers = { ...event.headers, [EVENT_ID_HEADER]: event.id };
    this.reachable(`publish ${event.subject}`);
    try {
      await publishToStream(this.replies, event.subject, encodeJson(event.payload), headers, {
        msgID: event.id,
      });
    } catch (error) {
      if (error instanceof NatsError && error.code === "503") throw noStreamFor(event.subject);
      rethrowUnreachable(error, `publish ${event.subject}`);
    }
  }

  /**
   * Two pull consumers of the same durable name: one on the EVENTS stream, one on the dead
   * letters replayed to this durable (see {@link NatsDeadLetters}).
   */
  consume(options: ConsumeOptions): Consumer {
    const consumers = [eventsSource(this.stream, options.subjects), replaySource(options.durable)].map(
      (source) =>
        new NatsConsumer(
          this.nc,
          this.jsm,
          this.js,
          this.replies,
          source,
          options,
          this.log,
          this.whileUp,
          this.link,
          this.letters,
        ),
    );
    const registered = this.register({
      close: async () => void (await Promise.all(consumers.map((c) => c.close()))),
    });
    return { close: () => registered.close(), ready: () => consumers[0]!.ready() };
  }

  async deleteDurable(name: string): Promise<boolean> {
    this.reachable(`delete consumer ${name}`);
    try {
      return await this.jsm.consumers.delete(this.stream, name);
    } catch (error) {
      if (apiErrorCode(error) === CONSUMER_NOT_FOUND) return false;
      rethrowUnreachable(error, `delete consumer ${name}`);
    }
  }

  deadLetters(): DeadLetters {
    return this.letters;
  }

  async broadcast(subject: string, payload: unknown): Promise<void> {
    this.nc.publish(subject, encodeJson(payload));
  }

  onBroadcast(subject: string, handler: (payload: unknown) => void): Closable {
    const sub = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) return this.log.error({ err: error, subject }, "subscription failed");
        try {
          handler(decodeJson(msg.data));
        } catch (err) {
          this.log.error({ err, subject: msg.subject }, "broadcast handler failed");
        }
      },
    });
    return this.register({ close: async () => sub.unsubscribe() });
  }

  /** Notice channels whose stream this bus has made sure of. */
  private readonly noticeStreams = new Map<string, Promise<void>>();

  private ensureNotices = (channel: string): Promise<void> => {
    let ensured = this.noticeStreams.get(channel);
    if (!ensured) {
      // Its followers and announcers all make sure of it; whichever comes first makes it. Its first
      // stream is recorded before anyone follows it (a follower could hold a lease on it).
      const { stream, subject, lease } = noticeStream(channel);
      ensured = this.streams
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
    this.reachable(`announce ${channel}`);
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
    this.reachable(what);
    const leases = this.leaseTable(channel);
    const lost = this.link.lost();
    const sentAt = performance.now();
    const [data, headers] =
      payloads.length === 1
        ? [encodeJson(payloads[0]), undefined]
        : [encodeJson(payloads), { [NOTICE_COUNT_HEADER]: String(payloads.length) }];
    const store = async () => {
      await this.ensureNotices(channel);
      return publishToStream(this.replies, subject, data, headers, { expectStream: stream });
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

  private noticeStreamsMade: Promise<KeyValue> | undefined;

  /** The bucket of each notice channel's first stream, by its creation time (`created`). */
  private firstNoticeStreams(): Promise<KeyValue> {
    if (!this.noticeStreamsMade) {
      const opened = this.kv(NOTICE_STREAMS_BUCKET);
      opened.catch(() => {
        if (this.noticeStreamsMade === opened) this.noticeStreamsMade = undefined;
      });
      this.noticeStreamsMade = opened;
    }
    return this.noticeStreamsMade;
  }

  /** Records the channel's stream as its first, unless one is recorded already (never changed). */
  private async recordFirstStream(channel: string): Promise<void> {
    const { stream } = noticeStream(channel);
    const [info, made] = await Promise.all([this.jsm.streams.info(stream), this.firstNoticeStreams()]);
    await made.create(channel, encodeJson(info.created)).catch((error: unknown) => {
      if (!(error instanceof KvConflictError)) throw error;
    });
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
    const [info, made] = await Promise.all([this.jsm.streams.info(stream), this.firstNoticeStreams()]);
    const first = await made.get(channel);
    if (!first) return undefined;
    return decodeJson(first.value) === info.created ? info : undefined;
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
      this.js,
      channel,
      () => this.ensureNotices(channel),
      this.lastSequence,
      { onNotice: () => {}, onReset: () => {} },
      this.log,
      this.whileUp,
      this.link,
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
    const acks = this.nc.subscribe(noticeStream(channel).applied, {
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
    this.register({
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
      await this.replies.request(api, body, undefined, NOTICE_BARRIER_WAIT_MS),
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
    this.reachable(`notices ${stream}`);
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
    this.reachable(`notices ${stream}`);
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
    this.reachable(`notices ${stream}`);
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
      this.js,
      channel,
      () => this.ensureNotices(channel),
      this.lastSequence,
      handlers,
      this.log,
      this.whileUp,
      this.link,
      // It reads the whole stream, from its end: notices and lease records in their one order.
      { startAt: async () => ({ seq: await this.streamEnd(channel) }) },
      {
        holder: () => new LeaseHolder(randomUUID(), () => performance.now()),
        append: (record) => appendLeaseRecord(this.replies, channel, record),
        ack: (holder, seq, mark) => {
          if (!this.connected) return;
          const ack = mark ? { holder, seq, lease: [mark.seq, mark.record] } : { holder, seq };
          this.nc.publish(noticeStream(channel).applied, encodeJson(ack));
        },
      },
    );
    const closable = this.register({ close: () => follower.close() });
    return {
      close: () => closable.close(),
      barrier: () => follower.barrier(),
      current: () => follower.current(),
    };
  }

  async kv(bucket: string, options?: KvOptions): Promise<KeyValue> {
    assertKvBucket(bucket);
    const open = () =>
      untilAnswered(`bucket ${bucket}`, this.log, () =>
        this.js.views.kv(bucket, {
          history: 1,
          replicas: this.streams.replicas,
          // Reads asked of the bucket's leader: a direct get (nats.js's default) may be answered by
          // a replica that has not applied the last write yet (12–15 of 300 reads right after a
          // write did, nats-server 2.9), and a compare-and-set on the revision read then fails, for
          // as long as that replica stays behind (a standby's take of a relay lease did so).
          allow_direct: false,
          ...(options?.ttlMs ? { ttl: options.ttlMs } : {}),
          ...(options?.readOnly ? { bindOnly: true } : {}),
        }),
      );
    // Several clients may open a new bucket at once; one whose `add` lost the race opens it again.
    const kv = await afterRacedAdds(open).catch((error) => this.streams.rethrowRefused(error));
    if (options?.readOnly) {
      // Bound, not made: a bucket its owner has not made yet is an error now (the caller opens it
      // again later), not a watch that never starts.
      await untilAnswered(`bucket ${bucket}`, this.log, () => this.jsm.streams.info(`KV_${bucket}`)).catch(
        (error) => {
          if (apiErrorCode(error) === STREAM_NOT_FOUND) throw new KvBucketMissingError(bucket);
          return this.streams.rethrowRefused(error);
        },
      );
    } else {
      // nats.js leaves a bucket that exists as it is: one made with another replica count is updated.
      await this.streams.ensure(`KV_${bucket}`, {});
    }
    // Erasing a value's bytes (not only marking its key deleted) goes through the KV's stream.
    const eraseRevision = (revision: number) =>
      this.jsm.streams.deleteMessage(`KV_${bucket}`, revision, true);
    return new NatsKeyValue(kv, (c) => this.register(c), this.log, eraseRevision, this.reachable);
  }

  onConnectionChange(handler: (connected: boolean) => void): Closable {
    this.watchers.add(handler);
    return this.register({ close: async () => void this.watchers.delete(handler) });
  }

  private tellWatchers(connected: boolean): void {
    for (const watcher of this.watchers) {
      try {
        watcher(connected);
      } catch (err) {
        this.log.error({ err }, "connection watcher failed");
      }
    }
  }

  async ping(): Promise<boolean> {
    if (this.nc.isClosed() || this.nc.isDraining()) return false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), 2_000);
    });
    const flushed = this.nc.flush().then(
      () => true,
      () => false,
    );
    return Promise.race([flushed, timeout]).finally(() => clearTimeout(timer));
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.closables].map((c) => c.close()));
      await Promise.allSettled([...this.inFlight]);
      if (!this.nc.isClosed()) await this.whileUp(() => this.nc.drain());
      if (!this.nc.isClosed()) await this.nc.close();
    })();
    return this.closing;
  }

  private register(closable: Closable): Closable {
    let closed: Promise<void> | undefined;
    const once: Closable = {
      close: () => {
        closed ??= closable.close().finally(() => this.closables.delete(once));
        return closed;
      },
    };
    this.closables.add(once);
    return once;
  }

  private track(work: Promise<unknown>, also: Set<Promise<unknown>>): void {
    const settled = work
      .catch((err) => this.log.error({ err }, "unexpected failure"))
      .finally(() => {
        this.inFlight.delete(settled);
        also.delete(settled);
      });
    this.inFlight.add(settled);
    also.add(settled);
  }
}

/**
 * The replies to this connection's requests (RPCs, JetStream publishes and ack confirmations,
 * notice barriers): one subscription to `<inbox>.*`, each request
 * waiting on a token of its own, as nats.js's own `request` does, without what that costs per
 * request: nats.js builds a `NatsError` (with its stack) for every request answered in time,
 * and a timer object with its own promise. A reply with status 503 and no body is the server's
 * "no responders". When the connection closes, the requests still waiting fail at once with
 * the error a request on the closed connection gets (`closedForRequests`), not at their
 * time-outs: no reply can reach them any more.
 */
class ReplyInbox {
  private readonly prefix: string;
  private readonly waiting = new Map<string, Waiting>();
  private next = 0;

  constructor(private readonly nc: NatsConnection) {
    this.prefix = `${createInbox()}.`;
    nc.subscribe(`${this.prefix}*`, {
      callback: (error, msg) => {
        if (error) return;
        const waiting = this.waiting.get(msg.subject.slice(this.prefix.length));
        if (!waiting) return;
        // No header section at all (every reply that fits in one message): nothing decoded.
        const part = msg.headers?.get(REPLY_PART_HEADER);
        if (part) return waiting.part(part, msg.data);
        if (msg.data.length === 0 && msg.headers?.code === 503)
          return waiting.settle(new NoRespondersError(waiting.subject));
        waiting.settle(msg.data);
      },
    });
    void nc.closed().then(() => this.failWaiting(closedForRequests));
  }

  /** Fails every request still waiting for its reply (one that can no longer come). */
  failWaiting(error: (subject: string) => Error): void {
    for (const { settle, subject } of [...this.waiting.values()]) settle(error(subject));
  }

  /** Resolves with the reply's bytes, joined from its parts when it came in several. */
  request(
    subject: string,
    data: Uint8Array,
    headers: Headers | undefined,
    timeoutMs: number,
  ): Promise<Uint8Array> {
    const token = (this.next++).toString(36);
    return new Promise<Uint8Array>((resolve, reject) => {
      const settle = (reply: Uint8Array | Error) => {
        clearTimeout(timer);
        this.waiting.delete(token);
        if (reply instanceof Error) reject(reply);
        else resolve(reply);
      };
      const timer = setTimeout(() => settle(new RequestTimeoutError(subject, timeoutMs)), timeoutMs);
      this.waiting.set(token, new Waiting(subject, settle));
      try {
        this.nc.publish(subject, data, {
          reply: this.prefix + token,
          ...(headers ? { headers: encodedHeaders(headers) } : {}),
        });
      } catch (error) {
        settle(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }
}

/** What JetStream answers a stored message with (its PubAck). */
interface PubAck {
  stream: string;
  seq: number;
  duplicate?: boolean;
}

/** JetStream's publish time-out, as nats.js's `js.publish` has it. */
const PUBLISH_TIMEOUT_MS = 5_000;

/**
 * Stores a message on the JetStream stream that takes its subject and resolves with the
 * stream's acknowledgement: nats.js's `js.publish`, through the connection's {@link ReplyInbox}
 * rather than nats.js's request, which builds a `NatsError` with its stack for every publish
 * acknowledged in time (a create's notice, every event the outbox relay publishes). A refusal
 * fails with the `NatsError` `js.publish` fails with (code "503" when no stream takes the
 * subject, "TIMEOUT" when nothing answered), so callers tell the cases apart as before.
 */
function publishToStream(...message: Parameters<typeof publishOnce>): Promise<PubAck> {
  const publish = () => publishOnce(...message);
  if (message[4].msgID === undefined) return publish();
  // A replicated stream refuses a message whose id another publish of it still has in flight
  // (two replays of one dead letter at once, two relays in a handover): asked again once that
  // one is stored, it is acknowledged as the duplicate it is.
  return askAgain(publish, {
    pauseMs: 20,
    forMs: PUBLISH_TIMEOUT_MS,
    retryOn: (error) => apiErrorCode(error) === DUPLICATE_IN_PROCESS,
  });
}

async function publishOnce(
  replies: ReplyInbox,
  subject: string,
  data: Uint8Array,
  headers: Headers | undefined,
  options: { msgID?: string; expectStream?: string },
): Promise<PubAck> {
  const h: Headers = { ...headers };
  if (options.msgID !== undefined) h["Nats-Msg-Id"] = options.msgID;
  if (options.expectStream !== undefined) h["Nats-Expected-Stream"] = options.expectStream;
  let reply: Uint8Array;
  try {
    reply = await replies.request(subject, data, h, PUBLISH_TIMEOUT_MS);
  } catch (error) {
    if (error instanceof NoRespondersError) throw NatsError.errorForCode(ErrorCode.NoResponders);
    if (error instanceof RequestTimeoutError) throw NatsError.errorForCode(ErrorCode.Timeout);
    throw error;
  }
  const ack = decodeJson(reply) as Partial<PubAck> & { error?: ApiError };
  if (ack.error) {
    const refused = new NatsError(
      ack.error.description ?? "JetStream refused the message",
      `${ack.error.code}`,
    );
    refused.api_error = ack.error;
    throw refused;
  }
  if (typeof ack.stream !== "string" || ack.stream === "" || typeof ack.seq !== "number")
    throw NatsError.errorForCode(ErrorCode.JetStreamInvalidAck);
  return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true };
}

/** Where a {@link NatsConsumer} pulls from, and how it reads an event out of a message. */
interface ConsumerSource {
  stream: string;
  subjects: string[];
  /** Whether the message holds one of the consumer's events (old servers filter coarsely). */
  wanted(m: JsMsg): boolean;
  decode(m: JsMsg): Omit<DeliveredEvent, "deliveryCount">;
  /** A replayed dead letter leaves its stream once handled or dead-lettered again. */
  removeWhenSettled: boolean;
}

function eventsSource(stream: string, subjects: string[]): ConsumerSource {
  return {
    stream,
    subjects,
    wanted: (m) => subjects.some((s) => subjectMatches(s, m.subject)),
    decode: (m) => {
      const all = fromNatsHeaders(m.headers);
      const id = all[EVENT_ID_HEADER] ?? m.headers?.get("Nats-Msg-Id") ?? String(m.seq);
      const headers = Object.fromEntries(
        Object.entries(all).filter(([k]) => k !== EVENT_ID_HEADER && !k.startsWith("Nats-")),
      );
      const publishedAt = new Date(Math.floor(m.info.timestampNanos / 1e6)).toISOString();
      return { id, subject: m.subject, payload: decodeJson(m.data), headers, publishedAt };
    },
    removeWhenSettled: false,
  };
}

/** Whether the connected server is nats-server 2.10 or later, where a consumer filters on a list of subjects. */
export function takesSubjectLists(nc: NatsConnection): boolean {
  const [major = 0, minor = 0] = (nc.info?.version ?? "0.0").split(".").map(Number);
  return major > 2 || (major === 2 && minor >= 10);
}

/**
 * The narrowest single filter taking every one of `subjects`: their common leading tokens and
 * `>` (`events.>` at widest), or the subject itself when they are all one.
 */
function coveringSubject(subjects: string[]): string {
  const split = subjects.map((s) => s.split("."));
  if (split.every((tokens) => tokens.join(".") === subjects[0])) return subjects[0]!;
  const shortest = Math.min(...split.map((tokens) => tokens.length));
  const common: string[] = [];
  for (let i = 0; i < shortest - 1; i++) {
    const token = split[0]![i]!;
    if (token === ">" || split.some((tokens) => tokens[i] !== token)) break;
    common.push(token);
  }
  return [...common, ">"].join(".");
}

function replaySource(durable: string): ConsumerSource {
  const subject = `${REPLAY_SUBJECT}.${durable}`;
  return {
    stream: DEAD_LETTER_STREAM,
    subjects: [subject],
    wanted: () => true,
    decode: (m) => (decodeJson(m.data) as Omit<DeadLetter, "id">).event,
    removeWhenSettled: true,
  };
}

/** A request waiting for its reply, and the parts of a reply sent in several (`REPLY_PART_HEADER`). */
class Waiting {
  private parts: Uint8Array[] | undefined;
  private received = 0;

  constructor(
    readonly subject: string,
    readonly settle: (reply: Uint8Array | Error) => void,
  ) {}

  part(header: string, data: Uint8Array): void {
    const [index = 0, count = 0] = header.split("/").map(Number);
    const fits = count >= 1 && index >= 1 && index <= count && (this.parts?.length ?? count) === count;
    if (!fits || this.parts?.[index - 1]) {
      this.settle(malformedReply(this.subject));
      return;
    }
    this.parts ??= new Array<Uint8Array>(count);
    this.parts[index - 1] = data;
    if (++this.received === count) this.settle(Buffer.concat(this.parts));
  }
}

function malformedReply(subject: string): RemoteError {
  return new RemoteError({ status: 500, type: "internal_error", message: `malformed reply on ${subject}` });
}

/**
 * A durable pull consumer. `max_ack_pending` is the consumer's `maxInFlight` (default 1): with 1
 * it keeps publish order even across redeliveries and across the replicas sharing the durable
 * (one event in flight per durable), at the cost of parallelism; with more, the server hands out
 * that many unacked events at once (to this client or others) and they are handled concurrently.
 * Handlers are not awaited in the receive loop: the server sends no more than `max_ack_pending`
 * before acks, and an ack-wait redelivery must not queue up behind the stuck handler it replaces.
 */
class NatsConsumer {
  private closing = false;
  private stopCurrent: (() => void) | undefined;
  private readonly done: Promise<void>;
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * The newest delivery seen of each event in hand, so a stale delivery's late failure does not
   * nak its successor (a redelivery after the ack wait, handled while the stale one still runs).
   */
  private readonly newest = new Map<number, number>();
  /**
   * When this process first saw each event in hand rejected. Kept in memory: after a restart, or
   * on another replica, the dead-letter time counts from the first rejection seen there (later,
   * never earlier).
   */
  private readonly failing = new Map<number, number>();
  /** Resolved by `close`, so a loop waiting for the connection stops waiting. */
  private readonly closed = signal();
  /** Resolved once the durable is known to exist on the server. */
  private readonly exists = signal();
  private readonly stream: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly replies: ReplyInbox,
    private readonly source: ConsumerSource,
    private readonly options: ConsumeOptions,
    private readonly log: BusLogger,
    private readonly whileUp: (work: () => Promise<unknown>) => Promise<void>,
    private readonly link: Link,
    private readonly letters: NatsDeadLetters,
  ) {
    this.stream = source.stream;
    this.done = this.run();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.closed.resolve();
    this.stopCurrent?.();
    // A JetStream request of the loop (re-creating the durable) may wait for its time-out.
    await this.whileUp(() => this.done);
    await Promise.allSettled([...this.inFlight]);
    // Acks sent while closing are fire-and-forget; make sure the server has them before anyone
    // else takes over.
    if (!this.nc.isClosed()) await this.whileUp(() => this.nc.flush());
  }

  /** Resolves once the durable exists; rejects if this consumer closes first. */
  ready(): Promise<void> {
    return Promise.race([
      this.exists.promise,
      this.closed.promise.then(() => {
        throw new Error(`consumer ${this.options.durable} closed before its durable existed`);
      }),
    ]);
  }

  /** Resolves when the connection is up, or this consumer closing (then `closing` is true). */
  private async connectionUp(): Promise<void> {
    await Promise.race([this.link.whenUp(), this.closed.promise]);
  }

  /**
   * Sends JetStream requests only while connected, and starts over at each disconnect: nats.js
   * drops what is sent while it is disconnected when it dials again, so a request then (checking
   * the durable, a pull, nats.js's own re-check of the consumer after a reconnect) would wait out
   * its time-out (5 s) and events would flow again seconds after the server is back. Instead
   * the loop stops its pulls when the connection drops, waits for the reconnect, and pulls again
   * at once. The events handed out before the drop are still handled and their acks confirmed
   * (`confirmAck`); one the server handed out that never arrived is redelivered after its ack wait.
   */
  private async run(): Promise<void> {
    while (!this.closing) {
      await this.connectionUp();
      if (this.closing) return;
      const lost = this.link.lost();
      try {
        if (this.source.stream === DEAD_LETTER_STREAM)
          await unlessLost(this.letters.ensureStream(), lost, `consumer ${this.options.durable}`);
        await unlessLost(this.ensureDurable(), lost, `consumer ${this.options.durable}`);
        this.exists.resolve();
        const consumer = await unlessLost(
          this.js.consumers.get(this.stream, this.options.durable),
          lost,
          `consumer ${this.options.durable}`,
        );
        // Pulls expire after 5 s (heartbeats every 2.5 s) rather than the client's 30 s, so a
        // pull the server lost otherwise (not with a disconnect) is replaced within seconds.
        const messages = await consumer.consume({
          max_messages: Math.max(10, this.maxInFlight),
          expires: PULL_EXPIRES_MS,
        });
        this.stopCurrent = () => messages.stop();
        if (this.closing) messages.stop();
        // At a disconnect: stop pulling (what was buffered is still yielded), and start over.
        void lost.then(() => messages.stop());
        for await (const m of messages) {
          // Stopping yields what was already buffered; hand it back at once rather than handle it.
          if (this.closing) {
            m.nak();
            continue;
          }
          const work = this.handle(m).finally(() => this.inFlight.delete(work));
          this.inFlight.add(work);
        }
      } catch (err) {
        if (this.closing || this.nc.isClosed()) return;
        // The connection dropped under a request: wait for the reconnect (top of the loop).
        if (err instanceof BusUnavailableError) continue;
        this.log.error({ err, durable: this.options.durable }, "consumer failed; retrying");
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  private get maxInFlight(): number {
    return Math.max(1, this.options.maxInFlight ?? 1);
  }

  /**
   * Multiple filter subjects need nats-server 2.10; older servers get one filter, the narrowest
   * wildcard taking them all (`events.catalogue.cheese.>` for two catalogue events).
   */
  private filter(): { filter_subject: string | undefined; filter_subjects: string[] | undefined } {
    // Each names the other as undefined, so an update replaces a durable's filter of the other
    // kind (a server refuses both at once).
    const { subjects } = this.source;
    if (subjects.length === 1) return { filter_subject: subjects[0]!, filter_subjects: undefined };
    if (takesSubjectLists(this.nc)) return { filter_subject: undefined, filter_subjects: subjects };
    return { filter_subject: coveringSubject(subjects), filter_subjects: undefined };
  }

  /**
   * Adds the durable, or updates the one there: its `ack_wait`, `max_deliver`, `max_ack_pending`
   * and (from 2.10) filters become these, and its place in the stream stays. A durable that
   * starts anywhere but at the stream's start is added with the place it has, if it exists.
   * nats-server 2.9 takes the add of an existing durable as an update; 2.10 and later refuse it
   * when the configuration differs ("consumer already exists"), and the durable is updated.
   */
  private async ensureDurable(): Promise<void> {
    const editable = {
      ...this.filter(),
      ack_wait: nanos(this.options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
      // Never given up on by the server: a failing event is dead-lettered by time (`handle`).
      max_deliver: -1,
      max_ack_pending: this.maxInFlight,
    };
    const add = (start: Partial<ConsumerConfig>) =>
      this.jsm.consumers
        .add(this.stream, {
          durable_name: this.options.durable,
          ack_policy: AckPolicy.Explicit,
          ...start,
          ...editable,
        })
        .catch((error: unknown) => {
          if (apiErrorCode(error) !== CONSUMER_EXISTS) throw error;
          return this.jsm.consumers.update(this.stream, this.options.durable, editable);
        });
    const startAt = this.options.startAt ?? "all";
    if (startAt === "all" || this.source.stream === DEAD_LETTER_STREAM) {
      await add({ deliver_policy: DeliverPolicy.All });
      return;
    }
    const place = await this.placeOf(this.options.durable);
    if (place) {
      await add(place);
      return;
    }
    try {
      await add(await this.startOf(startAt));
    } catch (error) {
      // Another client made it meanwhile, from its own reading of the stream: take its place.
      const made = await this.placeOf(this.options.durable);
      if (!made) throw error;
      await add(made);
    }
  }

  /** Where an existing durable was created to start (its config's), or undefined without it. */
  private async placeOf(durable: string): Promise<Partial<ConsumerConfig> | undefined> {
    const info = await this.consumerInfo(durable);
    if (!info) return undefined;
    const { deliver_policy, opt_start_seq, opt_start_time } = info.config;
    return {
      deliver_policy,
      ...(opt_start_seq !== undefined ? { opt_start_seq } : {}),
      ...(opt_start_time !== undefined ? { opt_start_time } : {}),
    };
  }

  /**
   * Where a new durable starts: after the stream's last event now, or where the durable it
   * replaces stands. An explicit sequence rather than `DeliverPolicy.New`: on a cluster every
   * replica of the consumer then starts there, whenever it applies the consumer's creation.
   */
  private async startOf(
    startAt: "new" | { after: string; otherwise?: "all" | "new" },
  ): Promise<Partial<ConsumerConfig>> {
    const replaced = startAt === "new" ? undefined : await this.consumerInfo(startAt.after);
    if (!replaced && startAt !== "new" && startAt.otherwise === "all")
      return { deliver_policy: DeliverPolicy.All };
    const seq = replaced
      ? replaced.ack_floor.stream_seq + 1
      : (await this.jsm.streams.info(this.stream)).state.last_seq + 1;
    return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: seq };
  }

  private async consumerInfo(durable: string): Promise<ConsumerInfo | undefined> {
    try {
      return await this.jsm.consumers.info(this.stream, durable);
    } catch (error) {
      if (apiErrorCode(error) === CONSUMER_NOT_FOUND) return undefined;
      throw error;
    }
  }

  private async handle(m: JsMsg): Promise<void> {
    const deliveryCount = m.info.deliveryCount;
    const base = { durable: this.options.durable, subject: m.subject, seq: m.seq, deliveryCount };
    if (!this.source.wanted(m)) {
      m.ack(); // only on old servers, whose single filter is the whole stream
      return;
    }
    let event: DeliveredEvent;
    try {
      event = { ...this.source.decode(m), deliveryCount };
    } catch (err) {
      this.log.error({ ...base, err }, "undecodable event dropped");
      m.term();
      return;
    }
    const seq = m.info.streamSequence;
    this.newest.set(seq, Math.max(this.newest.get(seq) ?? 0, deliveryCount));
    // A handler taking longer than the ack wait keeps its event: the server hears it is working.
    const working = setInterval(
      () => {
        try {
          m.working();
        } catch {
          // The connection closed under the handler: the event is redelivered after its ack wait.
        }
      },
      workingIntervalMs(this.options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
    );
    try {
      await this.options.handler(event);
    } catch (err) {
      if ((this.newest.get(seq) ?? 0) > deliveryCount) return;
      await this.retryOrDeadLetter(m, event, err);
      return;
    } finally {
      clearInterval(working);
      if (this.newest.get(seq) === deliveryCount) this.newest.delete(seq);
    }
    this.failing.delete(seq);
    // A lost plain ack holds one of several slots until the ack wait, not the whole durable, and
    // its event comes again, as after a crash (ConsumeOptions.handler).
    if (this.maxInFlight > 1) m.ack();
    else await this.confirmAck(m);
    if (this.source.removeWhenSettled) await this.letters.remove(m.seq).catch(() => {});
  }

  /**
   * Redelivers a rejected event after a backoff (capped), for as long as `deadLetterAfterMs`
   * from its first rejection; then parks it in the dead letters and terminates it here. The
   * first rejection is logged, not every retry; a dead letter once. Should the dead letter not
   * be stored (NATS unreachable), the event stays and is tried again.
   */
  private async retryOrDeadLetter(m: JsMsg, event: DeliveredEvent, err: unknown): Promise<void> {
    const seq = m.info.streamSequence;
    const now = Date.now();
    const firstFailedAt = this.failing.get(seq) ?? now;
    const details = { durable: this.options.durable, subject: event.subject, eventId: event.id };
    const delayMs = redeliveryDelayMs(
      event.deliveryCount,
      this.options.maxRedeliveryDelayMs ?? DEFAULT_MAX_REDELIVERY_DELAY_MS,
    );
    if (!this.failing.has(seq)) {
      this.failing.set(seq, now);
      this.log.warn(
        { ...details, deliveryCount: event.deliveryCount, err },
        "event handler failed; retrying",
      );
    }
    if (now - firstFailedAt < (this.options.deadLetterAfterMs ?? this.letters.afterMs)) {
      m.nak(delayMs);
      return;
    }
    let letter: DeadLetter;
    try {
      letter = await this.letters.park(
        {
          durable: this.options.durable,
          event: {
            id: event.id,
            subject: event.subject,
            payload: event.payload,
            headers: event.headers,
            publishedAt: event.publishedAt,
          },
          error: failureText(err),
          deliveries: event.deliveryCount,
          firstFailedAt: new Date(firstFailedAt).toISOString(),
          deadLetteredAt: new Date(now).toISOString(),
        },
        `${this.stream}:${seq}:${firstFailedAt}`,
      );
    } catch (parkError) {
      this.log.warn({ ...details, err: parkError }, "could not store a dead letter; the event stays");
      m.nak(delayMs);
      return;
    }
    this.failing.delete(seq);
    this.log.error(
      { ...details, deliveryCount: event.deliveryCount, err, deadLetter: letter.id },
      "event dead-lettered",
    );
    m.term();
    if (this.source.removeWhenSettled) await this.letters.remove(m.seq).catch(() => {});
  }

  /**
   * Acks and waits for the server to confirm it, sending the ack again (same ack subject) until
   * it does. A plain ack lost with a crashing nats-server leaves the event pending on the
   * restarted one, and with one event in flight per durable (`max_ack_pending: 1`) every later
   * event would wait for its redelivery (the whole ack wait). Acking an event the server no
   * longer holds pending is harmless (it answers and changes nothing). Once the ack wait has
   * passed the event has been redelivered anyway, and the retries stop. While the connection is
   * down it waits for the reconnect and sends it again at once then (an ack sent into a down
   * connection is dropped, and its confirmation would be waited for in vain).
   */
  private async confirmAck(m: JsMsg): Promise<void> {
    const ackSubject = (m as JsMsg & { reply?: string }).reply;
    if (!ackSubject) return m.ack();
    const giveUpAt = Date.now() + (this.options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS);
    while (true) {
      await this.connectionUp();
      const lost = this.link.lost();
      try {
        const confirmed = this.replies.request(ackSubject, ACK, undefined, ACK_CONFIRM_TIMEOUT_MS);
        await unlessLost(confirmed, lost, `ack ${m.seq}`);
        return;
      } catch (err) {
        if (this.closing || this.nc.isClosed() || Date.now() > giveUpAt) return m.ack();
        if (err instanceof BusUnavailableError) continue; // sent again once reconnected
        this.log.warn(
          { durable: this.options.durable, seq: m.seq, err },
          "ack not confirmed; sending it again",
        );
        await new Promise((r) => setTimeout(r, ACK_RETRY_MS));
      }
    }
  }
}

/** An answer of the JetStream API on a notice stream: a message get's, or a stream info's. */
interface NoticeApiAnswer {
  message?: { seq?: unknown; hdrs?: unknown };
  state?: { last_seq?: unknown };
  error?: { err_code?: number; description?: string };
}

/**
 * A replay of a notice stream from its first record: the last record it reads to (for an
 * announcer's follower, the last lease record then), and the stream's `created`.
 */
interface Replay {
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

/**
 * The most records an announcer's follower reads back from a notice stream's first one when it
 * starts (a few minutes of a few gateways' grants); past that it starts at the end.
 */
const REPLAY_MAX_RECORDS = 10_000;
/** Each notice channel's first stream (its `created`), by channel. */
const NOTICE_STREAMS_BUCKET = "notice_streams";

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
class NatsFollower {
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
    private readonly js: JetStreamClient,
    private readonly channel: string,
    private readonly ensure: () => Promise<void>,
    private readonly streamEnd: (channel: string) => Promise<number>,
    private readonly handlers: FollowHandlers,
    private readonly log: BusLogger,
    private readonly whileUp: (work: () => Promise<unknown>) => Promise<void>,
    private readonly link: Link,
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
    await this.whileUp(() => this.done);
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
      const last = await Promise.race([this.lastSequence(this.link.lost()), late]);
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
        if (this.following) this.log.warn({ err, channel: this.channel }, "read lease not renewed");
      });
    };
    ask();
    const timer = setInterval(ask, LEASE_RENEW_MS);
    return () => clearInterval(timer);
  }

  /** Like `NatsConsumer.run`: only while connected, starting over (and so resetting) at each reconnect. */
  private async run(): Promise<void> {
    while (!this.closing) {
      await Promise.race([this.link.whenUp(), this.closed.promise]);
      if (this.closing) return;
      const lost = this.link.lost();
      const what = `notices ${this.channel}`;
      let stopRenewing = () => {};
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
        const consumer = await unlessLost(
          this.js.consumers.get(this.stream, {
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
          this.log.error({ err, channel: this.channel }, "following notices failed; retrying");
          await Promise.race([new Promise((r) => setTimeout(r, 1_000)), this.closed.promise]);
        }
      } finally {
        stopRenewing();
        this.following = false;
        this.applied.abandon();
        this.hooks.onStop?.();
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
      this.log.error({ err, channel: this.channel, seq }, "unreadable notice");
      this.handlers.onReset();
      this.applied.advance(seq);
      return;
    }
    for (const payload of payloads) {
      try {
        this.handlers.onNotice(payload);
      } catch (err) {
        this.log.error({ err, channel: this.channel, seq }, "notice handler failed");
      }
    }
    this.applied.advance(seq);
  }
}

/** The stream of dead letters: `deadletters.parked.<durable>` and `deadletters.replay.<durable>`. */
const DEAD_LETTER_STREAM = "DEAD_LETTERS";
const PARKED_SUBJECT = "deadletters.parked";
const REPLAY_SUBJECT = "deadletters.replay";
const NO_MESSAGE_FOUND = 10037;
const MESSAGE_DELETE_FAILED = 10057;
/** A durable's name is one subject token. */
const DURABLE_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * Dead letters in a JetStream stream of their own (file storage, no limits: nothing in it is
 * dropped but by an operator). A parked letter is a message under `deadletters.parked.<durable>`
 * whose body is the {@link DeadLetter} without its id, which is the message's sequence. Replaying
 * it republishes that body under `deadletters.replay.<durable>`, which the durable's consumers
 * also pull (a consumer of the same name on this stream), and removes the parked message; a
 * replayed message is removed once handled or parked again.
 */
class NatsDeadLetters implements DeadLetters {
  private ready: Promise<void> | undefined;
  readonly afterMs: number;
  private readonly listener: DeadLetterListener | undefined;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly replies: ReplyInbox,
    private readonly streams: StreamSettings,
    options: { afterMs: number; listener?: DeadLetterListener },
  ) {
    this.afterMs = options.afterMs;
    this.listener = options.listener;
  }

  ensureStream(): Promise<void> {
    this.ready ??= this.addStream().catch((error) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  /** Kept in `NATS_REPLICAS` copies like EVENTS, with no limits: only an operator removes one. */
  private addStream(): Promise<void> {
    return this.streams.ensure(DEAD_LETTER_STREAM, { subjects: ["deadletters.>"] });
  }

  /** Stores a dead letter (once per `key` within the stream's duplicate window) and tells the listener. */
  async park(letter: Omit<DeadLetter, "id">, key: string): Promise<DeadLetter> {
    await this.ensureStream();
    const ack = await publishToStream(
      this.replies,
      `${PARKED_SUBJECT}.${letter.durable}`,
      encodeJson(letter),
      undefined,
      { msgID: `${letter.durable}:${key}` },
    );
    const parked = { id: String(ack.seq), ...letter };
    if (!ack.duplicate) this.listener?.(parked);
    return parked;
  }

  async list(options: { after?: string; limit: number; durable?: string }): Promise<DeadLetterPage> {
    if (options.durable !== undefined && !DURABLE_NAME.test(options.durable)) return { items: [] };
    await this.ensureStream();
    const filter = `${PARKED_SUBJECT}.${options.durable ?? ">"}`;
    const items: DeadLetter[] = [];
    let seq = (seqOf(options.after) ?? 0) + 1;
    // One more than asked for says whether there is a next page.
    while (items.length <= options.limit) {
      const message = await this.message({ seq, next_by_subj: filter });
      if (!message) break;
      items.push(toDeadLetter(message));
      seq = message.seq + 1;
    }
    if (items.length <= options.limit) return { items };
    items.pop();
    return { items, next: items.at(-1)!.id };
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    const message = await this.parked(id);
    return message && toDeadLetter(message);
  }

  async replay(id: string): Promise<boolean> {
    const message = await this.parked(id);
    if (!message) return false;
    const letter = toDeadLetter(message);
    // Two replays of one letter at once republish it once.
    await publishToStream(this.replies, `${REPLAY_SUBJECT}.${letter.durable}`, message.data, undefined, {
      msgID: `replay:${id}`,
    });
    await this.remove(message.seq);
    return true;
  }

  async delete(id: string): Promise<boolean> {
    const message = await this.parked(id);
    if (!message) return false;
    await this.remove(message.seq);
    return true;
  }

  /** Removes a message of the stream; one already gone is no error. */
  async remove(seq: number): Promise<void> {
    await this.jsm.streams.deleteMessage(DEAD_LETTER_STREAM, seq, false).catch((error) => {
      if (!messageGone(error)) throw error;
    });
  }

  private async parked(id: string) {
    const seq = seqOf(id);
    if (seq === undefined) return undefined;
    await this.ensureStream();
    const message = await this.message({ seq });
    return message?.subject.startsWith(`${PARKED_SUBJECT}.`) ? message : undefined;
  }

  /** The message asked for, or the next one on a subject (nats-server 2.9+), if any. */
  private async message(query: { seq: number; next_by_subj?: string }) {
    try {
      return await this.jsm.streams.getMessage(DEAD_LETTER_STREAM, query as { seq: number });
    } catch (error) {
      if (apiErrorCode(error) === NO_MESSAGE_FOUND) return undefined;
      throw error;
    }
  }
}

/**
 * Whether a message delete failed because the message was gone already: 10037 from one server, a
 * failed delete (10057) saying "no message found" from a replicated stream.
 */
function messageGone(error: unknown): boolean {
  const code = apiErrorCode(error);
  return (
    code === NO_MESSAGE_FOUND ||
    (code === MESSAGE_DELETE_FAILED && (error as NatsError).api_error?.description === "no message found")
  );
}

function seqOf(id: string | undefined): number | undefined {
  return id !== undefined && /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : undefined;
}

function toDeadLetter(message: { seq: number; data: Uint8Array }): DeadLetter {
  return { id: String(message.seq), ...(decodeJson(message.data) as Omit<DeadLetter, "id">) };
}

class NatsKeyValue implements KeyValue {
  constructor(
    private readonly kv: KV,
    private readonly register: (closable: Closable) => Closable,
    private readonly log: BusLogger,
    private readonly eraseRevision: (revision: number) => Promise<boolean>,
    private readonly reachable: (what: string) => void,
  ) {}

  async get(key: string) {
    assertKvKey(key);
    const entry = await this.answered(`kv get ${key}`, () => this.kv.get(key)).catch((error) =>
      rethrowUnreachable(error, `kv get ${key}`),
    );
    if (entry?.operation !== "PUT") return undefined;
    return { key, value: entry.value, revision: entry.revision };
  }

  async put(key: string, value: Uint8Array): Promise<number> {
    assertKvKey(key);
    return this.answered(`kv put ${key}`, () => this.kv.put(key, value)).catch((error) =>
      rethrowUnreachable(error, `kv put ${key}`),
    );
  }

  async create(key: string, value: Uint8Array): Promise<number> {
    assertKvKey(key);
    return this.answered(`kv create ${key}`, () => this.kv.create(key, value)).catch((error) =>
      rethrowConflict(error, key),
    );
  }

  async update(key: string, value: Uint8Array, revision: number): Promise<number> {
    assertKvKey(key);
    if (revision < 1) throw new KvConflictError(key);
    return this.answered(`kv update ${key}`, () => this.kv.update(key, value, revision)).catch((error) =>
      rethrowConflict(error, key),
    );
  }

  async delete(key: string): Promise<void> {
    assertKvKey(key);
    await this.answered(`kv delete ${key}`, () => this.kv.delete(key)).catch((error) =>
      rethrowUnreachable(error, `kv delete ${key}`),
    );
  }

  /**
   * One request of the bucket, asked again while the server answers it "no responders" (503),
   * {@link KV_NO_RESPONDERS_TRIES} times in all: when several clients open a new bucket at once,
   * nats-server (2.9) may answer one whose open found the stream before that stream listens on
   * its subjects, and its first write or read then gets no responder (4 clients racing to create
   * a record in a new bucket: 15 of 300 did; each was answered 100 ms later). No responder means
   * nobody received the request, so asking again cannot write twice. Throws
   * {@link BusUnavailableError} while the connection is down, at every try.
   */
  private answered<T>(what: string, request: () => Promise<T>): Promise<T> {
    return askAgain(
      () => {
        this.reachable(what);
        return request();
      },
      {
        pauseMs: KV_NO_RESPONDERS_RETRY_MS,
        tries: KV_NO_RESPONDERS_TRIES,
        retryOn: (error) => error instanceof NatsError && error.code === "503",
      },
    );
  }

  async deleteMatching(keyPattern: string): Promise<number> {
    this.reachable(`kv keys ${keyPattern}`);
    const keys: string[] = [];
    try {
      for await (const key of await this.kv.keys(keyPattern)) keys.push(key);
    } catch (error) {
      rethrowUnreachable(error, `kv keys ${keyPattern}`);
    }
    for (const key of keys) {
      // The value's message is overwritten in the stream's files (a plain delete only marks it).
      const entry = await this.kv.get(key).catch((error) => rethrowUnreachable(error, `kv get ${key}`));
      if (entry?.operation === "PUT") {
        await this.eraseRevision(entry.revision).catch((error) => {
          if (!messageGone(error)) throw error;
        });
      }
      await this.delete(key);
    }
    return keys.length;
  }

  /**
   * The NATS watcher starts asynchronously, so it asks for the last values too and keeps those
   * written since `watch` was called, by server timestamp (same clock on one host, NTP otherwise).
   * Millisecond precision: a write in the same millisecond before the call may be reported, which
   * errs on the safe side. With history 1, two writes of one key while the watcher is starting
   * arrive as the latest only.
   */
  watch(keyPattern: string, onChange: Parameters<KeyValue["watch"]>[1]): Closable {
    const since = Date.now();
    let stopped = false;
    const started = this.kv.watch({ key: keyPattern }).then((iter) => {
      if (stopped) iter.stop();
      void (async () => {
        for await (const e of iter) {
          if (e.created.getTime() < since) continue;
          try {
            if (e.operation === "PUT") onChange({ key: e.key, value: e.value, revision: e.revision });
            else onChange({ key: e.key, deleted: true });
          } catch (err) {
            this.log.error({ err, key: e.key }, "kv watch handler failed");
          }
        }
      })();
      return iter;
    });
    started.catch((err) => this.log.error({ err, keyPattern }, "kv watch failed"));
    return this.register({
      close: async () => {
        stopped = true;
        (await started.catch(() => undefined))?.stop();
      },
    });
  }
}

function rethrowConflict(error: unknown, key: string): never {
  if (WRONG_LAST_SEQUENCE.has(apiErrorCode(error) ?? 0)) throw new KvConflictError(key);
  rethrowUnreachable(error, `kv write ${key}`);
}

function parseEnvelope(bytes: Uint8Array): ReplyEnvelope | undefined {
  try {
    const value = decodeJson(bytes) as ReplyEnvelope | undefined;
    if (value?.ok === true) return value;
    if (value?.ok === false && typeof value.error?.status === "number") return value;
  } catch {}
  return undefined;
}

/** Characters a header key may have (nats.js's `canonicalMIMEHeaderKey` refuses the others). */
const HEADER_KEY = /^[!-9;-~]+$/;
const CR_OR_LF = /[\r\n]/;

/**
 * Headers to send, encoded once as nats.js writes them: nats.js's `publish` reads nothing of a
 * message's headers but `encode()`. Its `MsgHdrsImpl` canonicalised each key appended into a new
 * string, looked it up by listing every key, and `set` did that twice: ~10 KB of the
 * catalogue's garbage per create (its request's and publishes' headers). The same checks: a key
 * of printable characters without ":", a value without CR or LF (trimmed, as nats.js does).
 */
function encodedHeaders(headers: Headers): MsgHdrs {
  let text = "NATS/1.0";
  for (const key in headers) {
    const value = headers[key]!;
    if (!HEADER_KEY.test(key)) throw new NatsError(`'${key}' is not a valid header key`, ErrorCode.BadHeader);
    if (CR_OR_LF.test(value))
      throw new NatsError("invalid header value - \\r and \\n are not allowed.", ErrorCode.BadHeader);
    text += `\r\n${key}: ${value.trim()}`;
  }
  const bytes = Buffer.from(`${text}\r\n\r\n`);
  return { encode: () => bytes } as unknown as MsgHdrs;
}

/** What {@link receivedHeaders} reads of nats.js's `MsgImpl` (2.x): the bytes received, the header section's length. */
interface ReceivedMsg {
  _msg?: { hdr?: unknown };
  _rdata?: unknown;
  _headers?: unknown;
}

const headerText = new TextDecoder();

/**
 * A request's headers, read from the bytes received in one pass: nats.js's `headers` decodes
 * them into a `MsgHdrsImpl`, each key canonicalised into a new string and looked up by listing
 * every key (five headers: ~5.9 KB of garbage against ~1.2 KB, in process). The same reading:
 * lines after the status line, a key up to the first ":", its value trimmed, a key's first
 * value. A message not shaped as nats.js 2.x makes them, or whose headers nats.js already
 * decoded, is read through `headers`.
 */
function receivedHeaders(msg: Msg): Headers {
  const { _msg, _rdata, _headers } = msg as unknown as ReceivedMsg;
  const length = _msg?.hdr;
  if (_headers !== undefined || typeof length !== "number" || !(_rdata instanceof Uint8Array))
    return fromNatsHeaders(msg.headers);
  return length <= 0 ? {} : headersOfText(headerText.decode(_rdata.subarray(0, length)));
}

/**
 * Headers from their text as NATS carries them (a received message's, or a stored one's from a
 * message get): lines after the status line, a key up to the first ":", its value trimmed, a
 * key's first value.
 */
function headersOfText(text: string): Headers {
  const out: Headers = {};
  const lines = text.split("\r\n");
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon);
    if (!Object.hasOwn(out, key)) out[key] = line.slice(colon + 1).trim();
  }
  return out;
}

function fromNatsHeaders(h: MsgHdrs | undefined): Headers {
  const out: Headers = {};
  for (const [key, values] of h ?? []) out[key] = values[0] ?? "";
  return out;
}
