/**
 * The messaging port: request/reply between services, durable integration events, and a small
 * key-value store with compare-and-set. Adapters: NATS (core request/reply, JetStream streams
 * and KV) and an in-process bus with the same semantics for the single-process fallback.
 *
 * Payloads are JSON values. Typing and validation (zod) live one layer up, in `rpc.ts`.
 */

export type Headers = Record<string, string>;

export interface RequestOptions {
  /** Deadline for the reply; a late or absent reply rejects with {@link RequestTimeoutError}. */
  timeoutMs: number;
  headers?: Headers;
}

export interface IncomingRequest {
  subject: string;
  payload: unknown;
  headers: Headers;
}

/**
 * A request handler. Its return value is the reply payload. If it throws, the bus sends
 * the error as a {@link RemoteError} reply (see `toErrorReply`), so callers always get an answer.
 */
export type RequestHandler = (request: IncomingRequest) => Promise<unknown>;

export interface IntegrationEvent {
  /** Unique id; publishing the same id twice within the dedup window stores it once. */
  id: string;
  /** Subject, e.g. `events.catalogue.cheese.created` (see docs/architecture.md). */
  subject: string;
  /** Sent as JSON; a `CheckedText` (a payload checked when it was made) as its text. */
  payload: unknown;
  headers?: Headers;
}

export interface DeliveredEvent extends IntegrationEvent {
  headers: Headers;
  /** 1 on first delivery, higher on redelivery. */
  deliveryCount: number;
  /**
   * When the bus stored the event (ISO 8601, milliseconds): the same on every redelivery, and
   * in the bus's storage order (events stored in the same millisecond share it).
   */
  publishedAt: string;
}

export interface ConsumeOptions {
  /** Durable consumer name; consumers with the same name share the work (one delivery each). */
  durable: string;
  /** Subject filters, NATS wildcards allowed (`events.ordering.>`). */
  subjects: string[];
  /**
   * Where the durable starts when this call creates it; an existing durable keeps its place.
   * `"all"` (the default): the stream's first retained event. `"new"`: the events published once
   * it exists (see {@link Consumer.ready}). `{ after: name }`: it replaces the durable `name` of
   * the same stream, starting at the first event that one has not acknowledged (events it had
   * acknowledged beyond that come again: handling must be idempotent), or `otherwise` without it
   * (`"new"` by default).
   */
  startAt?: "all" | "new" | { after: string; otherwise?: "all" | "new" };
  /**
   * Ack deadline: an event not acked by then is redelivered (its handler's process or the server
   * died). While the handler runs the consumer keeps extending it, so a slow handler keeps its event.
   */
  ackWaitMs?: number;
  /**
   * A rejected event is redelivered after 500 ms, 1 s, 2 s… up to this (default 5 min); it is
   * never dropped.
   */
  maxRedeliveryDelayMs?: number;
  /**
   * An event rejected again this long after its first rejection (default: the bus's, 24 h) moves
   * to the dead letters (see {@link DeadLetters}), and the durable goes on with the next one.
   */
  deadLetterAfterMs?: number;
  /**
   * How many events of the durable may be in flight at once, across all its clients (default 1).
   * With 1, events arrive in publish order, one at a time, a rejected one redelivered before any
   * later one. With more, they are handed out in publish order but handled concurrently (by one
   * client or several), so they may finish, and a redelivered one arrive, after later ones: the
   * handler must not depend on the order (`publishedAt` says where an event stands).
   */
  maxInFlight?: number;
  /**
   * Resolve to ack; reject to have the event redelivered after a backoff (and, after
   * `deadLetterAfterMs`, dead-lettered). Events arrive in publish order per consumer, one at a
   * time (see `maxInFlight`); a replayed dead letter comes whenever it is replayed.
   *
   * With `maxInFlight` 1 the ack is confirmed by the server (sent again until it is): a lost one
   * would hold the whole durable until the event's ack wait. With more, it is acked without
   * waiting for the confirmation: a lost ack holds one slot of several, and the event comes again
   * after the ack wait, as after a crash, which the handler takes as any redelivery.
   */
  handler: (event: DeliveredEvent) => Promise<void>;
}

export interface Closable {
  close(): Promise<void>;
}

/** A durable being consumed (`MessageBus.consume`). */
export interface Consumer extends Closable {
  /**
   * Resolves once the durable exists on the bus (found or created): every event published after
   * that reaches it. Waits while the bus is unreachable; rejects if the consumer is closed first.
   */
  ready(): Promise<void>;
}

export interface KvEntry {
  key: string;
  value: Uint8Array;
  /** Revision of this entry; pass it to `update` for compare-and-set. */
  revision: number;
}

export interface KeyValue {
  get(key: string): Promise<KvEntry | undefined>;
  /** Sets unconditionally; returns the new revision. */
  put(key: string, value: Uint8Array): Promise<number>;
  /** Creates only if absent; throws {@link KvConflictError} otherwise. */
  create(key: string, value: Uint8Array): Promise<number>;
  /** Sets only if the current revision equals `revision`; throws {@link KvConflictError} otherwise. */
  update(key: string, value: Uint8Array, revision: number): Promise<number>;
  delete(key: string): Promise<void>;
  /**
   * Deletes every key matching `keyPattern` (NATS wildcards) and erases their values from storage
   * (for personal data); resolves with how many keys it deleted.
   */
  deleteMatching(keyPattern: string): Promise<number>;
  /**
   * Calls `onChange` with the later states of keys matching `keyPattern` (NATS wildcards), in
   * order. A bucket keeps one revision per key: a value overwritten or deleted before the watcher
   * took it (a watcher lagging under load) arrives as its successor only, so the last state of
   * each key always arrives, not always every step to it.
   */
  watch(keyPattern: string, onChange: (entry: KvEntry | { key: string; deleted: true }) => void): Closable;
}

/**
 * What a follower of a notice channel is told (see {@link MessageBus.follow}). Both are called
 * synchronously from the bus's delivery, in order, never concurrently.
 */
export interface FollowHandlers {
  /** A notice announced after the follower started, in the channel's order. */
  onNotice(payload: unknown): void;
  /**
   * The follower (re)started at the channel's current end, or found a notice it cannot read or a
   * gap: notices may have been missed, so whatever was learnt from them is unknown. Called when
   * it starts, and after a reconnect, a re-created consumer or a gap.
   */
  onReset(): void;
}

export interface Follower extends Closable {
  /**
   * Resolves true once every notice whose `announce` had resolved (anywhere, through any server)
   * before this call has been handed to `onNotice` (or covered by an `onReset`); false when that
   * cannot be known within a short wait (about a second): not following (starting, closed,
   * disconnected), the channel out of reach, or the notices slow to come. One round trip to the
   * channel's owner (NATS: the stream leader) per call. The fallback while `current()` is false.
   */
  barrier(): Promise<boolean>;
  /**
   * True when every notice whose `announce` has resolved (anywhere) has been handed to
   * `onNotice` (or covered by an `onReset`), known without asking anyone: NATS, while this
   * follower holds a read lease (an announce waits until each holder applied its notice or its
   * lease ran out); in process, while it has applied the channel's last notice. Checked and acted
   * on in the same synchronous step.
   */
  current(): boolean;
}

export interface KvOptions {
  /** Entries older than this vanish (the bucket's max age). */
  ttlMs?: number;
  /**
   * The bucket is another service's, only read here: it is opened as it is, never made or
   * changed (its owner makes it; the NATS permissions allow this service no more).
   */
  readOnly?: boolean;
}

/**
 * An integration event a durable consumer's handler kept rejecting for `deadLetterAfterMs`: kept
 * with the failure, the consumer's name and the event as it was published, until an operator
 * replays it (to that consumer only) or deletes it.
 */
export interface DeadLetter {
  /** The dead letter's own id (its position in the dead-letter store; grows with time). */
  id: string;
  /** The durable consumer that failed it; a replay goes to that consumer only. */
  durable: string;
  event: { id: string; subject: string; payload: unknown; headers: Headers; publishedAt: string };
  /** The last failure (`Name: message`, at most 1,000 characters). */
  error: string;
  /** Deliveries made before it was dead-lettered. */
  deliveries: number;
  firstFailedAt: string;
  deadLetteredAt: string;
}

export interface DeadLetterPage {
  /** Oldest first. */
  items: DeadLetter[];
  /** Pass as `after` for the next page; absent on the last one. */
  next?: string;
}

/** What the bus knows of its dead letters, shared by every client of the bus. */
export interface DeadLetters {
  list(options: { after?: string; limit: number; durable?: string }): Promise<DeadLetterPage>;
  get(id: string): Promise<DeadLetter | undefined>;
  /**
   * Hands the event to its durable consumer again (a first delivery; the consumer need not be
   * running now) and removes the dead letter; false if there is no such dead letter.
   */
  replay(id: string): Promise<boolean>;
  /** Removes it for good; false if there is no such dead letter. */
  delete(id: string): Promise<boolean>;
}

/** Told of every event a consumer of this client dead-letters (once each): for a metric. */
export type DeadLetterListener = (letter: DeadLetter) => void;

export interface MessageBus {
  request(subject: string, payload: unknown, options: RequestOptions): Promise<unknown>;
  /** Serves a subject; handlers with the same queue group share requests (one replica answers). */
  serve(subject: string, options: { queue: string }, handler: RequestHandler): Closable;
  /** Publishes durably; resolves once the bus has stored the event. */
  publish(event: IntegrationEvent): Promise<void>;
  consume(options: ConsumeOptions): Consumer;
  /**
   * Deletes a durable of the events stream with the events it holds unacknowledged (another
   * durable replacing it starts with `startAt: { after: name }`); false if there was none.
   */
  deleteDurable(name: string): Promise<boolean>;
  /** Fire-and-forget broadcast to every current subscriber (no queue group, no persistence). */
  broadcast(subject: string, payload: unknown): Promise<void>;
  onBroadcast(subject: string, handler: (payload: unknown) => void): Closable;
  /**
   * Appends `payload` to the notice channel `channel` (letters, digits, `_`, `-`): a small,
   * bounded, ordered log (NATS: the JetStream stream `NOTICES_<channel>` on `notices.<channel>`,
   * kept an hour at most, with the bus's replica count). Resolves once stored and every follower
   * holding a read lease has applied it (or its lease ran out: a lease at most after the call), so
   * every barrier taken afterwards, and every follower `current()` afterwards, covers it; rejects ({@link BusUnavailableError}) when it
   * could not be stored.
   */
  announce(channel: string, payload: unknown): Promise<void>;
  /** Follows `channel` from its current end: each later notice in order, and a barrier. */
  follow(channel: string, handlers: FollowHandlers): Follower;
  kv(bucket: string, options?: KvOptions): Promise<KeyValue>;
  deadLetters(): DeadLetters;
  /** True when the bus answers (readiness). */
  ping(): Promise<boolean>;
  /**
   * Calls `handler(false)` when the connection to the bus drops and `handler(true)` once it is
   * back: broadcasts sent meanwhile were lost, so whoever keeps state from them starts over.
   * The in-process bus never drops.
   */
  onConnectionChange(handler: (connected: boolean) => void): Closable;
  /** Stops taking messages, lets in-flight handlers finish, then closes. */
  close(): Promise<void>;
}

/**
 * A reply whose `body` is JSON text its caller passes on without decoding it (the gateway writes
 * it as an HTTP answer's body); `meta` is the part the caller reads. `serveRpc` makes one for a
 * definition with `passThrough`, from the reply it checked; the bus carries it as it is.
 */
export class PassedReply {
  constructor(
    readonly meta: unknown,
    readonly body: string | Uint8Array,
  ) {}
}

/** Reply envelope on the wire: how success and errors cross NATS. */
export type ReplyEnvelope = { ok: true; data: unknown } | { ok: false; error: RemoteErrorBody };

export interface RemoteErrorBody {
  /** HTTP-like status the gateway should answer with (404, 409, 422, 503...). */
  status: number;
  type: string;
  message: string;
  errors?: { field: string; message: string }[];
}

/** An error raised by a remote handler, or by the bus itself (timeouts, no responders). */
export class RemoteError extends Error {
  override readonly name = "RemoteError";
  constructor(readonly body: RemoteErrorBody) {
    super(body.message);
  }
}

export class RequestTimeoutError extends RemoteError {
  constructor(subject: string, timeoutMs: number) {
    super({
      status: 503,
      type: "service_unavailable",
      message: `no reply on ${subject} within ${timeoutMs} ms`,
    });
  }
}

export class NoRespondersError extends RemoteError {
  constructor(subject: string) {
    super({ status: 503, type: "service_unavailable", message: `no service answers ${subject}` });
  }
}

/**
 * The message bus itself cannot be reached (NATS down or reconnecting): a key-value read or
 * write, or a publish, got no answer. A 503 like a request's time-out, so a caller that meets it
 * answers `service_unavailable` rather than 500.
 */
export class BusUnavailableError extends RemoteError {
  constructor(what: string, cause?: unknown) {
    super({ status: 503, type: "service_unavailable", message: `message bus unavailable: ${what}` });
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * What a request on a closed bus fails with, and a request still waiting for its reply when the
 * bus closes (at once, not at its time-out): a 503, like the bus out of reach.
 */
export function closedForRequests(subject: string): BusUnavailableError {
  return new BusUnavailableError(`request ${subject}: the connection is closed`);
}

/** A bucket opened read only (`KvOptions.readOnly`) that its owner has not made yet. */
export class KvBucketMissingError extends Error {
  override readonly name = "KvBucketMissingError";
  constructor(readonly bucket: string) {
    super(`key-value bucket ${bucket} does not exist (yet)`);
  }
}

export class KvConflictError extends Error {
  override readonly name = "KvConflictError";
  constructor(readonly key: string) {
    super(`key ${key} changed concurrently`);
  }
}

/** Turns whatever a handler threw into the wire body; unknown errors become a 500. */
export function toErrorReply(error: unknown): ReplyEnvelope {
  if (error instanceof RemoteError) return { ok: false, error: error.body };
  if (isErrorBody(error)) return { ok: false, error };
  return { ok: false, error: { status: 500, type: "internal_error", message: "internal error" } };
}

function isErrorBody(value: unknown): value is RemoteErrorBody {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as RemoteErrorBody).status === "number" &&
    typeof (value as RemoteErrorBody).message === "string"
  );
}
