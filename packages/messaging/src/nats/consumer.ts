/**
 * A durable pull consumer of integration events (and of the dead letters replayed to it).
 */
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerInfo,
  DeliverPolicy,
  type JsMsg,
  type NatsConnection,
  nanos,
} from "nats";
import {
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_MAX_REDELIVERY_DELAY_MS,
  failureText,
  redeliveryDelayMs,
  workingIntervalMs,
} from "../delivery.ts";
import { decodeJson } from "../json.ts";
import { BusUnavailableError, type ConsumeOptions, type DeadLetter, type DeliveredEvent } from "../port.ts";
import { subjectMatches } from "../subjects.ts";
import type { BusContext } from "./context.ts";
import { DEAD_LETTER_STREAM, type NatsDeadLetters, REPLAY_SUBJECT } from "./dead-letters.ts";
import { apiErrorCode, CONSUMER_EXISTS, CONSUMER_NOT_FOUND } from "./errors.ts";
import { EVENT_ID_HEADER, fromNatsHeaders } from "./headers.ts";
import { signal, unlessLost } from "./link.ts";

/** The JetStream ack payload, and how an unconfirmed ack is retried (see `confirmAck`). */
const ACK = new TextEncoder().encode("+ACK");
const ACK_CONFIRM_TIMEOUT_MS = 1_000;
const ACK_RETRY_MS = 250;
/** A pull request's lifetime; see `NatsConsumer.run`. */
const PULL_EXPIRES_MS = 5_000;

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

export function eventsSource(stream: string, subjects: string[]): ConsumerSource {
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

export function replaySource(durable: string): ConsumerSource {
  const subject = `${REPLAY_SUBJECT}.${durable}`;
  return {
    stream: DEAD_LETTER_STREAM,
    subjects: [subject],
    wanted: () => true,
    decode: (m) => (decodeJson(m.data) as Omit<DeadLetter, "id">).event,
    removeWhenSettled: true,
  };
}

/**
 * A durable pull consumer. `max_ack_pending` is the consumer's `maxInFlight` (default 1): with 1
 * it keeps publish order even across redeliveries and across the replicas sharing the durable
 * (one event in flight per durable), at the cost of parallelism; with more, the server hands out
 * that many unacked events at once (to this client or others) and they are handled concurrently.
 * Handlers are not awaited in the receive loop: the server sends no more than `max_ack_pending`
 * before acks, and an ack-wait redelivery must not queue up behind the stuck handler it replaces.
 */
export class NatsConsumer {
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
    private readonly bus: BusContext,
    private readonly source: ConsumerSource,
    private readonly options: ConsumeOptions,
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
    await this.bus.whileUp(() => this.done);
    await Promise.allSettled([...this.inFlight]);
    // Acks sent while closing are fire-and-forget; make sure the server has them before anyone
    // else takes over.
    if (!this.bus.nc.isClosed()) await this.bus.whileUp(() => this.bus.nc.flush());
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
    await Promise.race([this.bus.link.whenUp(), this.closed.promise]);
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
      const lost = this.bus.link.lost();
      try {
        if (this.source.stream === DEAD_LETTER_STREAM)
          await unlessLost(this.letters.ensureStream(), lost, `consumer ${this.options.durable}`);
        await unlessLost(this.ensureDurable(), lost, `consumer ${this.options.durable}`);
        this.exists.resolve();
        const consumer = await unlessLost(
          this.bus.js.consumers.get(this.stream, this.options.durable),
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
        if (this.closing || this.bus.nc.isClosed()) return;
        // The connection dropped under a request: wait for the reconnect (top of the loop).
        if (err instanceof BusUnavailableError) continue;
        this.bus.log.error({ err, durable: this.options.durable }, "consumer failed; retrying");
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
    if (takesSubjectLists(this.bus.nc)) return { filter_subject: undefined, filter_subjects: subjects };
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
      this.bus.jsm.consumers
        .add(this.stream, {
          durable_name: this.options.durable,
          ack_policy: AckPolicy.Explicit,
          ...start,
          ...editable,
        })
        .catch((error: unknown) => {
          if (apiErrorCode(error) !== CONSUMER_EXISTS) throw error;
          return this.bus.jsm.consumers.update(this.stream, this.options.durable, editable);
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
      : (await this.bus.jsm.streams.info(this.stream)).state.last_seq + 1;
    return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: seq };
  }

  private async consumerInfo(durable: string): Promise<ConsumerInfo | undefined> {
    try {
      return await this.bus.jsm.consumers.info(this.stream, durable);
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
      this.bus.log.error({ ...base, err }, "undecodable event dropped");
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
      this.bus.log.warn(
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
      this.bus.log.warn({ ...details, err: parkError }, "could not store a dead letter; the event stays");
      m.nak(delayMs);
      return;
    }
    this.failing.delete(seq);
    this.bus.log.error(
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
      const lost = this.bus.link.lost();
      try {
        const confirmed = this.bus.replies.request(ackSubject, ACK, undefined, ACK_CONFIRM_TIMEOUT_MS);
        await unlessLost(confirmed, lost, `ack ${m.seq}`);
        return;
      } catch (err) {
        if (this.closing || this.bus.nc.isClosed() || Date.now() > giveUpAt) return m.ack();
        if (err instanceof BusUnavailableError) continue; // sent again once reconnected
        this.bus.log.warn(
          { durable: this.options.durable, seq: m.seq, err },
          "ack not confirmed; sending it again",
        );
        await new Promise((r) => setTimeout(r, ACK_RETRY_MS));
      }
    }
  }
}
