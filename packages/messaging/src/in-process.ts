/**
 * The in-process bus: the single-process fallback (no nats-server) and a fast test double.
 * Observable behaviour matches the NATS adapter: JSON copies of payloads, reply envelopes,
 * queue groups served round robin, dedup by event id, durable consumers with at-least-once
 * delivery in publish order (`maxInFlight` events in flight per durable, one by default), rejected
 * events retried with a capped backoff and dead-lettered after `deadLetterAfterMs`, KV with
 * revisions and CAS, and notice channels with sequences and barriers. A handler runs in this
 * process, so it is never abandoned while it runs (as the NATS adapter keeps extending a running
 * handler's ack wait).
 *
 * Everything lives in memory. In single-process mode durability comes from the event store:
 * publishers republish from their checkpoint at start (dedup makes that harmless) and
 * consumers are idempotent by event id.
 */
import { pastDeadline, withDeadline } from "./deadline.ts";
import {
  DEFAULT_DEAD_LETTER_AFTER_MS,
  DEFAULT_MAX_REDELIVERY_DELAY_MS,
  failureText,
  noStreamFor,
  redeliveryDelayMs,
} from "./delivery.ts";
import { copyJson } from "./json.ts";
import { type BusLogger, consoleLogger } from "./log.ts";
import { AppliedSequence, NOTICE_BARRIER_WAIT_MS } from "./notices.ts";
import {
  type Closable,
  type ConsumeOptions,
  type Consumer,
  closedForRequests,
  type DeadLetter,
  type DeadLetterListener,
  type DeadLetters,
  type DeliveredEvent,
  type Follower,
  type FollowHandlers,
  type Headers,
  type IncomingRequest,
  type IntegrationEvent,
  type KeyValue,
  KvBucketMissingError,
  KvConflictError,
  type KvEntry,
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
import { assertKvBucket, assertKvKey, assertNoticeChannel, subjectMatches } from "./subjects.ts";

export interface InProcessBrokerOptions {
  /** Publishing the same event id again within this window stores it once (default 1 h). */
  duplicateWindowMs?: number;
  /** Oldest events are dropped beyond this many, like a stream's max_msgs (default 100 000). */
  maxEvents?: number;
  /** A consumer's default `deadLetterAfterMs` (24 h). */
  deadLetterAfterMs?: number;
  onDeadLetter?: DeadLetterListener;
  logger?: BusLogger;
}

/** The shared backend; every `connect()` is a client, as every process has its own NATS connection. */
export interface InProcessBroker {
  connect(name?: string): MessageBus;
}

export function createInProcessBroker(options: InProcessBrokerOptions = {}): InProcessBroker {
  const broker = new Broker(options);
  return { connect: () => new InProcessBus(broker) };
}

/** A broker with a single client, for code that only needs one bus. */
export function createInProcessBus(options: InProcessBrokerOptions = {}): MessageBus {
  return createInProcessBroker(options).connect();
}

type Work = Set<Promise<unknown>>;
type WatchChange = KvEntry | { key: string; deleted: true };

interface Responder {
  subject: string;
  queue: string;
  /** Undefined when the request is not handled (it arrived past its deadline). */
  answer(request: IncomingRequest): Promise<ReplyEnvelope | undefined>;
}

interface StoredEvent {
  seq: number;
  id: string;
  subject: string;
  payload: unknown;
  headers: Headers;
  publishedAt: string;
}

interface Member {
  run(event: DeliveredEvent): Promise<void>;
}

/**
 * An event a durable is working on; it stays pending until acked or dead-lettered, and holds one
 * of the durable's `maxInFlight` places (with one place, that keeps order). A replayed dead
 * letter is keyed by its letter's negated id, apart from the stream's sequences.
 */
interface Pending {
  key: number;
  event: StoredEvent;
  deliveries: number;
  /** A delivery is with a member (its handler running), or a redelivery is waiting its turn. */
  busy: boolean;
  timer?: NodeJS.Timeout;
  firstFailedAt?: number;
}

/** A notice channel: its last sequence, and its followers' delivery functions. */
interface Channel {
  last: number;
  followers: Set<(seq: number, payload: unknown) => void>;
}

interface Durable {
  name: string;
  subjects: string[];
  maxRedeliveryDelayMs: number;
  deadLetterAfterMs: number;
  maxInFlight: number;
  /** Dead letters replayed to this durable, waiting for a place. */
  replays: Pending[];
  /** The next stored event to look at for this durable. */
  nextSeq: number;
  members: Member[];
  turn: number;
  pending: Map<number, Pending>;
}

class Broker {
  readonly log: BusLogger;
  private readonly responders = new Set<Responder>();
  private readonly turns = new Map<string, number>();
  private readonly events: StoredEvent[] = [];
  private lastSeq = 0;
  private readonly seen = new Map<string, number>();
  private readonly durables = new Map<string, Durable>();
  readonly listeners = new Set<{ subject: string; handler: (payload: unknown) => void }>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly channels = new Map<string, Channel>();
  private readonly duplicateWindowMs: number;
  private readonly maxEvents: number;
  private readonly deadLetterAfterMs: number;
  private readonly onDeadLetter: DeadLetterListener | undefined;
  private readonly letters = new Map<number, DeadLetter>();
  private lastLetter = 0;

  constructor(options: InProcessBrokerOptions) {
    this.log = options.logger ?? consoleLogger;
    this.duplicateWindowMs = options.duplicateWindowMs ?? 3_600_000;
    this.maxEvents = options.maxEvents ?? 100_000;
    this.deadLetterAfterMs = options.deadLetterAfterMs ?? DEFAULT_DEAD_LETTER_AFTER_MS;
    this.onDeadLetter = options.onDeadLetter;
  }

  addResponder(responder: Responder): () => void {
    this.responders.add(responder);
    return () => this.responders.delete(responder);
  }

  /** One responder per queue group, taking turns, like NATS queue subscriptions. */
  pickResponders(subject: string): Responder[] {
    const groups = new Map<string, Responder[]>();
    for (const r of this.responders) {
      if (!subjectMatches(r.subject, subject)) continue;
      const key = `${r.subject} ${r.queue}`;
      groups.set(key, [...(groups.get(key) ?? []), r]);
    }
    return [...groups].map(([key, members]) => {
      const turn = this.turns.get(key) ?? 0;
      this.turns.set(key, turn + 1);
      return members[turn % members.length]!;
    });
  }

  publish(event: IntegrationEvent): void {
    if (!subjectMatches("events.>", event.subject)) throw noStreamFor(event.subject);
    const now = Date.now();
    // `seen` is in insertion order, so expired ids are at the front.
    for (const [id, at] of this.seen) {
      if (now - at < this.duplicateWindowMs) break;
      this.seen.delete(id);
    }
    const { id, subject, payload, headers } = copyJson({ ...event, headers: event.headers ?? {} });
    if (this.seen.has(id)) return;
    this.seen.set(id, now);
    const publishedAt = new Date(now).toISOString();
    this.events.push({ seq: ++this.lastSeq, id, subject, payload, headers, publishedAt });
    if (this.events.length > this.maxEvents) this.events.splice(0, this.events.length - this.maxEvents);
    for (const durable of this.durables.values()) this.pump(durable);
  }

  /** Deletes a durable with what it holds; false if there was none. */
  deleteDurable(name: string): boolean {
    const d = this.durables.get(name);
    if (!d) return false;
    for (const p of d.pending.values()) clearTimeout(p.timer);
    this.durables.delete(name);
    return true;
  }

  /** Where a durable created now starts (`ConsumeOptions.startAt`). */
  private startOf(startAt: NonNullable<ConsumeOptions["startAt"]>): number {
    if (startAt === "all") return 1;
    const replaced = startAt === "new" ? undefined : this.durables.get(startAt.after);
    if (!replaced) return startAt !== "new" && startAt.otherwise === "all" ? 1 : this.lastSeq + 1;
    // Its first unacknowledged event (replayed dead letters have negative keys).
    const held = [...replaced.pending.keys()].filter((key) => key > 0);
    return Math.min(replaced.nextSeq, ...held);
  }

  /** The durable of that name; a new one starts where `startAt` says (deliver-all by default). */
  private durable(name: string, startAt: NonNullable<ConsumeOptions["startAt"]> = "all"): Durable {
    let d = this.durables.get(name);
    if (!d) {
      d = {
        name,
        subjects: [],
        maxRedeliveryDelayMs: DEFAULT_MAX_REDELIVERY_DELAY_MS,
        deadLetterAfterMs: this.deadLetterAfterMs,
        maxInFlight: 1,
        replays: [],
        nextSeq: this.startOf(startAt),
        members: [],
        turn: 0,
        pending: new Map(),
      };
      this.durables.set(name, d);
    }
    return d;
  }

  join(options: ConsumeOptions, member: Member): () => void {
    const durable = this.durable(options.durable, options.startAt ?? "all");
    // Like re-adding a NATS durable: the latest options win.
    durable.subjects = options.subjects;
    durable.maxRedeliveryDelayMs = options.maxRedeliveryDelayMs ?? DEFAULT_MAX_REDELIVERY_DELAY_MS;
    durable.deadLetterAfterMs = options.deadLetterAfterMs ?? this.deadLetterAfterMs;
    durable.maxInFlight = Math.max(1, options.maxInFlight ?? 1);
    durable.members.push(member);
    // Events taken while no member was there wait for one.
    for (const p of durable.pending.values()) if (!p.busy) this.deliver(durable, p);
    this.pump(durable);
    return () => {
      durable.members = durable.members.filter((m) => m !== member);
    };
  }

  /**
   * Takes replayed dead letters first, then the next events of the durable's subjects in stream
   * order, while it has places free.
   */
  private pump(d: Durable): void {
    while (d.replays.length > 0 && d.pending.size < d.maxInFlight) {
      const p = d.replays.shift()!;
      d.pending.set(p.key, p);
      this.deliver(d, p);
    }
    const first = this.events[0]?.seq ?? this.lastSeq + 1;
    for (let i = Math.max(0, d.nextSeq - first); i < this.events.length; i++) {
      if (d.pending.size >= d.maxInFlight) return;
      const event = this.events[i]!;
      d.nextSeq = event.seq + 1;
      if (d.subjects.some((s) => subjectMatches(s, event.subject))) {
        const p: Pending = { key: event.seq, event, deliveries: 0, busy: false };
        d.pending.set(event.seq, p);
        this.deliver(d, p);
      }
    }
    d.nextSeq = this.lastSeq + 1;
  }

  private isPending(d: Durable, p: Pending): boolean {
    return d.pending.get(p.key) === p;
  }

  /** Hands a pending event to the next member; with no member it waits for one to join. */
  private deliver(d: Durable, p: Pending): void {
    clearTimeout(p.timer);
    p.timer = undefined;
    p.busy = false;
    if (d.members.length === 0) return;
    p.busy = true;
    const member = d.members[d.turn++ % d.members.length]!;
    const n = ++p.deliveries;
    const { id, subject, payload, headers, publishedAt } = p.event;
    member.run({ ...copyJson({ id, subject, payload, headers }), publishedAt, deliveryCount: n }).then(
      () => {
        if (this.isPending(d, p)) this.advance(d, p);
      },
      (err) => {
        if (this.isPending(d, p) && p.deliveries === n) this.retryOrDeadLetter(d, p, err);
      },
    );
  }

  private retryOrDeadLetter(d: Durable, p: Pending, reason: unknown): void {
    const now = Date.now();
    p.firstFailedAt ??= now;
    const details = {
      durable: d.name,
      subject: p.event.subject,
      eventId: p.event.id,
      deliveryCount: p.deliveries,
    };
    if (now - p.firstFailedAt >= d.deadLetterAfterMs) {
      const letter = this.park(d.name, p, reason, now);
      this.log.error({ ...details, err: reason, deadLetter: letter.id }, "event dead-lettered");
      this.onDeadLetter?.(letter);
      this.advance(d, p);
      return;
    }
    // Once, not at every retry: an outage would otherwise log a line per event every few minutes.
    if (p.deliveries === 1) this.log.warn({ ...details, err: reason }, "event handler failed; retrying");
    p.timer = setTimeout(
      () => {
        if (this.isPending(d, p)) this.deliver(d, p);
      },
      redeliveryDelayMs(p.deliveries, d.maxRedeliveryDelayMs),
    ).unref();
  }

  private park(durable: string, p: Pending, reason: unknown, now: number): DeadLetter {
    const id = ++this.lastLetter;
    const { id: eventId, subject, payload, headers, publishedAt } = p.event;
    const letter: DeadLetter = {
      id: String(id),
      durable,
      event: copyJson({ id: eventId, subject, payload, headers, publishedAt }),
      error: failureText(reason),
      deliveries: p.deliveries,
      firstFailedAt: new Date(p.firstFailedAt ?? now).toISOString(),
      deadLetteredAt: new Date(now).toISOString(),
    };
    this.letters.set(id, letter);
    return copyJson(letter);
  }

  private advance(d: Durable, p: Pending): void {
    clearTimeout(p.timer);
    d.pending.delete(p.key);
    this.pump(d);
  }

  channel(name: string): Channel {
    let channel = this.channels.get(name);
    if (!channel) {
      channel = { last: 0, followers: new Set() };
      this.channels.set(name, channel);
    }
    return channel;
  }

  readonly deadLetters: DeadLetters = {
    list: async ({ after, limit, durable }) => {
      const from = after === undefined ? 0 : Number(after);
      const matching = [...this.letters.values()].filter(
        (l) => Number(l.id) > from && (durable === undefined || l.durable === durable),
      );
      const items = matching.slice(0, limit).map((l) => copyJson(l));
      return matching.length > limit ? { items, next: items.at(-1)!.id } : { items };
    },
    get: async (id) => {
      const letter = this.letters.get(Number(id));
      return letter && copyJson(letter);
    },
    replay: async (id) => {
      const letter = this.letters.get(Number(id));
      if (!letter) return false;
      this.letters.delete(Number(id));
      const d = this.durable(letter.durable);
      const event: StoredEvent = { seq: -Number(id), ...copyJson(letter.event) };
      d.replays.push({ key: -Number(id), event, deliveries: 0, busy: false });
      this.pump(d);
      return true;
    },
    delete: async (id) => this.letters.delete(Number(id)),
  };

  hasBucket(name: string): boolean {
    return this.buckets.has(name);
  }

  bucket(name: string, ttlMs: number | undefined): Bucket {
    let bucket = this.buckets.get(name);
    if (!bucket) {
      // Like NATS, the first creation fixes the bucket's settings.
      bucket = new Bucket(ttlMs, this.log);
      this.buckets.set(name, bucket);
    }
    return bucket;
  }
}

class InProcessBus implements MessageBus {
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

interface Stored {
  value?: Uint8Array;
  revision: number;
  writtenAt: number;
  deleted: boolean;
}

/** One KV bucket: a revision counter shared by its keys, like the stream behind a NATS bucket. */
class Bucket {
  private revision = 0;
  private readonly entries = new Map<string, Stored>();
  private readonly watchers = new Set<{ pattern: string; onChange: (change: WatchChange) => void }>();
  private lastSweep = Date.now();

  constructor(
    private readonly ttlMs: number | undefined,
    private readonly log: BusLogger,
  ) {}

  /** The latest write of `key` (a delete marker included) unless it has aged out. */
  current(key: string): Stored | undefined {
    assertKvKey(key);
    const stored = this.entries.get(key);
    if (stored && this.ttlMs && Date.now() - stored.writtenAt >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return stored;
  }

  get(key: string): KvEntry | undefined {
    const stored = this.current(key);
    if (!stored?.value) return undefined;
    return { key, value: stored.value.slice(), revision: stored.revision };
  }

  /** Keys holding a value now (not deleted, not aged out). */
  liveKeys(): string[] {
    return [...this.entries.keys()].filter((key) => this.current(key)?.deleted === false);
  }

  /** Writes a value, or a delete marker when `value` is undefined; returns the new revision. */
  write(key: string, value: Uint8Array | undefined): number {
    assertKvKey(key);
    this.sweep();
    const stored: Stored = {
      value: value?.slice(),
      revision: ++this.revision,
      writtenAt: Date.now(),
      deleted: value === undefined,
    };
    this.entries.set(key, stored);
    for (const watcher of this.watchers) {
      if (!subjectMatches(watcher.pattern, key)) continue;
      const change: WatchChange = value
        ? { key, value: value.slice(), revision: stored.revision }
        : { key, deleted: true };
      queueMicrotask(() => {
        try {
          watcher.onChange(change);
        } catch (err) {
          this.log.error({ err, key }, "kv watch handler failed");
        }
      });
    }
    return stored.revision;
  }

  watch(pattern: string, onChange: (change: WatchChange) => void): () => Promise<void> {
    const watcher = { pattern, onChange };
    this.watchers.add(watcher);
    return async () => {
      this.watchers.delete(watcher);
    };
  }

  /** Drops aged-out entries now and then, so keys nobody reads again do not pile up. */
  private sweep(): void {
    if (!this.ttlMs || Date.now() - this.lastSweep < Math.min(this.ttlMs, 60_000)) return;
    this.lastSweep = Date.now();
    for (const key of [...this.entries.keys()]) this.current(key);
  }
}
