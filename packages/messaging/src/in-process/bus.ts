import { pastDeadline, withDeadline } from "../deadline.ts";
import { copyJson } from "../json.ts";
import { AppliedSequence, NOTICE_BARRIER_WAIT_MS } from "../notices.ts";
import {
  type Closable,
  type ConsumeOptions,
  type Consumer,
  closedForRequests,
  type DeadLetters,
  type Follower,
  type FollowHandlers,
  type IncomingRequest,
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
} from "../port.ts";
import { assertKvBucket, assertNoticeChannel, subjectMatches } from "../subjects.ts";
import type { Broker, Work } from "./broker.ts";

/** One client of a {@link Broker}: what one process's connection to NATS is, as a `MessageBus`. */
export class InProcessBus implements MessageBus {
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly inFlight: Work = new Set();
  private readonly closables = new Set<Closable>();
  /** Requests waiting for their reply; each entry fails its request. */
  private readonly pending = new Set<() => void>();

  constructor(private readonly broker: Broker) {}

  async request(subject: string, payload: unknown, options: RequestOptions): Promise<unknown> {
    if (this.closed) throw closedForRequests(subject);
    const body = copyJson(payload);
    const responders = this.broker.pickResponders(subject);
    if (responders.length === 0) throw new NoRespondersError(subject);
    return new Promise((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        this.pending.delete(fail);
        outcome();
      };
      // Closing the bus fails the request at once, as a request made after the close fails.
      const fail = () => settle(() => reject(closedForRequests(subject)));
      const timer = setTimeout(
        () => settle(() => reject(new RequestTimeoutError(subject, options.timeoutMs))),
        options.timeoutMs,
      );
      this.pending.add(fail);
      for (const responder of responders) {
        const headers = withDeadline(options.headers, options.timeoutMs);
        const request = { subject, payload: copyJson(body), headers };
        void responder.answer(request).then((reply) => {
          if (!reply || !this.pending.has(fail)) return; // not handled (past its deadline), or settled
          if (reply.ok) settle(() => resolve(reply.data));
          else settle(() => reject(new RemoteError(reply.error)));
        });
      }
    });
  }

  serve(subject: string, options: { queue: string }, handler: RequestHandler): Closable {
    this.assertOpen();
    const mine: Work = new Set();
    const remove = this.broker.addResponder({
      subject,
      queue: options.queue,
      answer: (request) => this.track(this.answer(request, handler), mine),
    });
    return this.register(async () => {
      remove();
      await Promise.allSettled([...mine]);
    });
  }

  private async answer(
    request: IncomingRequest,
    handler: RequestHandler,
  ): Promise<ReplyEnvelope | undefined> {
    await Promise.resolve(); // never run the handler inside the caller's stack
    if (pastDeadline(request.headers)) {
      this.broker.log.warn(
        { subject: request.subject },
        "request arrived after its caller's deadline; not handled",
      );
      return undefined;
    }
    let reply: ReplyEnvelope;
    try {
      reply = { ok: true, data: await handler(request) };
    } catch (err) {
      if (!(err instanceof RemoteError))
        this.broker.log.error({ err, subject: request.subject }, "handler failed");
      reply = toErrorReply(err);
    }
    try {
      // What the NATS adapter's caller gets: the meta decoded again, the body's text as it is.
      if (reply.ok && reply.data instanceof PassedReply)
        return { ok: true, data: new PassedReply(copyJson(reply.data.meta), reply.data.body) };
      return copyJson(reply);
    } catch (err) {
      this.broker.log.error({ err, subject: request.subject }, "reply is not serialisable");
      return toErrorReply(err);
    }
  }

  async publish(event: IntegrationEvent): Promise<void> {
    this.assertOpen();
    this.broker.publish(event);
  }

  consume(options: ConsumeOptions): Consumer {
    this.assertOpen();
    const mine: Work = new Set();
    const leave = this.broker.join(options, {
      run: (event) =>
        this.track(
          Promise.resolve().then(() => options.handler(event)),
          mine,
        ),
    });
    const closable = this.register(async () => {
      leave();
      await Promise.allSettled([...mine]);
    });
    // The durable exists from the join on.
    return { close: () => closable.close(), ready: async () => {} };
  }

  async deleteDurable(name: string): Promise<boolean> {
    this.assertOpen();
    return this.broker.deleteDurable(name);
  }

  async broadcast(subject: string, payload: unknown): Promise<void> {
    this.assertOpen();
    const body = copyJson(payload);
    for (const listener of this.broker.listeners) {
      if (!subjectMatches(listener.subject, subject)) continue;
      queueMicrotask(() => {
        try {
          listener.handler(copyJson(body));
        } catch (err) {
          this.broker.log.error({ err, subject }, "broadcast handler failed");
        }
      });
    }
  }

  onBroadcast(subject: string, handler: (payload: unknown) => void): Closable {
    this.assertOpen();
    const listener = { subject, handler };
    this.broker.listeners.add(listener);
    return this.register(async () => {
      this.broker.listeners.delete(listener);
    });
  }

  /** Stored at once with the channel's next sequence; each follower gets it in a microtask, in order. */
  async announce(channel: string, payload: unknown): Promise<void> {
    this.assertOpen();
    assertNoticeChannel(channel);
    const body = copyJson(payload);
    const stored = this.broker.channel(channel);
    const seq = ++stored.last;
    for (const deliver of stored.followers) queueMicrotask(() => deliver(seq, copyJson(body)));
  }

  follow(channel: string, handlers: FollowHandlers): Follower {
    this.assertOpen();
    assertNoticeChannel(channel);
    const stored = this.broker.channel(channel);
    const applied = new AppliedSequence();
    let following = true;
    const deliver = (seq: number, payload: unknown) => {
      if (!following) return;
      try {
        handlers.onNotice(payload);
      } catch (err) {
        this.broker.log.error({ err, channel }, "notice handler failed");
      }
      applied.advance(seq);
    };
    // Started at the channel's end, told before any notice (microtasks run in order).
    applied.restart(stored.last);
    queueMicrotask(() => following && handlers.onReset());
    stored.followers.add(deliver);
    const closable = this.register(async () => {
      following = false;
      stored.followers.delete(deliver);
      applied.abandon();
    });
    return {
      close: () => closable.close(),
      barrier: async () => following && applied.reach(stored.last, NOTICE_BARRIER_WAIT_MS),
      current: () => following && applied.value >= stored.last,
    };
  }

  async kv(bucket: string, options?: KvOptions): Promise<KeyValue> {
    this.assertOpen();
    assertKvBucket(bucket);
    // As on NATS, a bucket opened read only is another service's: bound, never made.
    if (options?.readOnly && !this.broker.hasBucket(bucket)) {
      throw new KvBucketMissingError(bucket);
    }
    const store = this.broker.bucket(bucket, options?.ttlMs);
    return {
      get: async (key) => store.get(key),
      put: async (key, value) => store.write(key, value),
      create: async (key, value) => {
        const current = store.current(key);
        if (current && !current.deleted) throw new KvConflictError(key);
        return store.write(key, value);
      },
      update: async (key, value, revision) => {
        if ((store.current(key)?.revision ?? 0) !== revision || revision < 1) throw new KvConflictError(key);
        return store.write(key, value);
      },
      delete: async (key) => {
        store.write(key, undefined);
      },
      deleteMatching: async (pattern) => {
        const keys = store.liveKeys().filter((key) => subjectMatches(pattern, key));
        for (const key of keys) store.write(key, undefined);
        return keys.length;
      },
      watch: (pattern, onChange) => this.register(store.watch(pattern, onChange)),
    };
  }

  deadLetters(): DeadLetters {
    return this.broker.deadLetters;
  }

  onConnectionChange(): Closable {
    // Nothing between this bus and its broker can drop.
    return { close: async () => {} };
  }

  async ping(): Promise<boolean> {
    return !this.closed;
  }

  close(): Promise<void> {
    this.closed = true;
    for (const fail of [...this.pending]) fail();
    this.closing ??= (async () => {
      await Promise.allSettled([...this.closables].map((c) => c.close()));
      await Promise.allSettled([...this.inFlight]);
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("message bus is closed");
  }

  private register(close: () => Promise<void>): Closable {
    let done: Promise<void> | undefined;
    const closable: Closable = {
      close: () => {
        done ??= close().finally(() => this.closables.delete(closable));
        return done;
      },
    };
    this.closables.add(closable);
    return closable;
  }

  private track<T>(work: Promise<T>, also: Work): Promise<T> {
    const settled = work.then(
      () => {},
      () => {},
    );
    this.inFlight.add(settled);
    also.add(settled);
    void settled.then(() => {
      this.inFlight.delete(settled);
      also.delete(settled);
    });
    return work;
  }
}
