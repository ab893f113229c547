import {
  DEFAULT_DEAD_LETTER_AFTER_MS,
  DEFAULT_DUPLICATE_WINDOW_MS,
  DEFAULT_MAX_REDELIVERY_DELAY_MS,
  failureText,
  noStreamFor,
  redeliveryDelayMs,
} from "../delivery.ts";
import { copyJson } from "../json.ts";
import { type BusLogger, consoleLogger } from "../log.ts";
import type {
  ConsumeOptions,
  DeadLetter,
  DeadLetterListener,
  DeadLetters,
  DeliveredEvent,
  Headers,
  IncomingRequest,
  IntegrationEvent,
  ReplyEnvelope,
} from "../port.ts";
import { subjectMatches } from "../subjects.ts";

import { Bucket } from "./bucket.ts";

export interface InProcessBrokerOptions {
  /** Publishing the same event id again within this window stores it once (default 2 min). */
  duplicateWindowMs?: number;
  /** Oldest events are dropped beyond this many, like a stream's max_msgs (default 100 000). */
  maxEvents?: number;
  /** A consumer's default `deadLetterAfterMs` (24 h). */
  deadLetterAfterMs?: number;
  onDeadLetter?: DeadLetterListener;
  logger?: BusLogger;
}

export type Work = Set<Promise<unknown>>;

export interface Responder {
  subject: string;
  queue: string;
  /** Undefined when the request is not handled (it arrived past its deadline). */
  answer(request: IncomingRequest): Promise<ReplyEnvelope | undefined>;
}

export interface StoredEvent {
  seq: number;
  id: string;
  subject: string;
  payload: unknown;
  headers: Headers;
  publishedAt: string;
}

export interface Member {
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

/**
 * What the NATS servers hold for their clients, here shared by every client of one broker: the
 * responders of each subject (queue groups served in turn), the stored events (deduplicated by
 * id) and their durables (deliveries, redeliveries, dead letters), broadcast listeners, key-value
 * buckets and notice channels.
 */
export class Broker {
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
    this.duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
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
