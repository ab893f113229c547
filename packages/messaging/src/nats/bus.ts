import {
  connect,
  ErrorCode,
  Events,
  type JetStreamClient,
  type JetStreamManager,
  type Msg,
  type NatsConnection,
  NatsError,
  nanos,
  headers as natsHeaders,
  nkeyAuthenticator,
} from "nats";
import { pastDeadline, withDeadline } from "../deadline.ts";
import { DEFAULT_DEAD_LETTER_AFTER_MS, DEFAULT_DUPLICATE_WINDOW_MS, noStreamFor } from "../delivery.ts";
import { decodeJson, encodeJson, encodePassedReply, splitPassedReply } from "../json.ts";
import { type BusLogger, consoleLogger } from "../log.ts";
import {
  BusUnavailableError,
  type Closable,
  type ConsumeOptions,
  type Consumer,
  closedForRequests,
  type DeadLetterListener,
  type DeadLetters,
  type Follower,
  type FollowHandlers,
  type IntegrationEvent,
  type KeyValue,
  KvBucketMissingError,
  type KvOptions,
  type MessageBus,
  PassedReply,
  RemoteError,
  type ReplyEnvelope,
  type RequestHandler,
  type RequestOptions,
  toErrorReply,
} from "../port.ts";
import { assertKvBucket } from "../subjects.ts";
import { eventsSource, NatsConsumer, replaySource } from "./consumer.ts";
import type { BusContext } from "./context.ts";
import { NatsDeadLetters } from "./dead-letters.ts";
import {
  apiErrorCode,
  BusAuthorizationError,
  CONSUMER_NOT_FOUND,
  disconnected,
  rethrowUnreachable,
  STREAM_NOT_FOUND,
} from "./errors.ts";
import { EVENT_ID_HEADER, receivedHeaders } from "./headers.ts";
import { NatsKeyValue } from "./key-value.ts";
import { type Link, resolved, signal } from "./link.ts";
import { NoticeChannels } from "./notice-channels.ts";
import {
  DEFAULT_MAX_PAYLOAD,
  malformedReply,
  PART_HEADROOM,
  publishToStream,
  REPLY_PART_HEADER,
  ReplyInbox,
} from "./reply-inbox.ts";
import { afterRacedAdds, StreamSettings, untilAnswered } from "./streams.ts";
import { coalesceWrites } from "./writes.ts";

export interface NatsBusOptions {
  /** One server, or several of one cluster (the client picks one and fails over to the others). */
  url: string | string[];
  /** Connection name, shown by the server (`nats server report connections`). */
  name: string;
  /** JetStream stream holding `events.>`; created or updated at connect. */
  eventsStream?: string;
  /**
   * Publishing the same event id again within this window stores it once (at most `eventsMaxAgeMs`;
   * default {@link DEFAULT_DUPLICATE_WINDOW_MS}).
   */
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
      duplicate_window: nanos(Math.min(options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS, maxAgeMs)),
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
  /** What the bus's parts share of it (context.ts), made once. */
  private readonly context: BusContext;
  private readonly notices: NoticeChannels;

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
    this.context = {
      nc,
      jsm,
      js,
      replies,
      streams,
      log,
      link: this.link,
      reachable: this.reachable,
      connected: () => this.connected,
      whileUp: this.whileUp,
      register: (closable) => this.register(closable),
      kv: (bucket) => this.kv(bucket),
    };
    this.notices = new NoticeChannels(this.context);
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
      (source) => new NatsConsumer(this.context, source, options, this.letters),
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

  announce(channel: string, payload: unknown): Promise<void> {
    return this.notices.announce(channel, payload);
  }

  follow(channel: string, handlers: FollowHandlers): Follower {
    return this.notices.follow(channel, handlers);
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
    return new NatsKeyValue(this.context, bucket, kv);
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

function parseEnvelope(bytes: Uint8Array): ReplyEnvelope | undefined {
  try {
    const value = decodeJson(bytes) as ReplyEnvelope | undefined;
    if (value?.ok === true) return value;
    if (value?.ok === false && typeof value.error?.status === "number") return value;
  } catch {}
  return undefined;
}
