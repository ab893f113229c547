/**
 * The dead letters: a JetStream stream of their own, listed, replayed and removed.
 */
import type { JetStreamManager } from "nats";
import { decodeJson, encodeJson } from "../json.ts";
import type { DeadLetter, DeadLetterListener, DeadLetterPage, DeadLetters } from "../port.ts";
import { apiErrorCode, messageGone, NO_MESSAGE_FOUND } from "./errors.ts";
import { publishToStream, type ReplyInbox } from "./reply-inbox.ts";
import type { StreamSettings } from "./streams.ts";

/** The stream of dead letters: `deadletters.parked.<durable>` and `deadletters.replay.<durable>`. */
export const DEAD_LETTER_STREAM = "DEAD_LETTERS";
const PARKED_SUBJECT = "deadletters.parked";
export const REPLAY_SUBJECT = "deadletters.replay";

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
export class NatsDeadLetters implements DeadLetters {
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

function seqOf(id: string | undefined): number | undefined {
  return id !== undefined && /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : undefined;
}

function toDeadLetter(message: { seq: number; data: Uint8Array }): DeadLetter {
  return { id: String(message.seq), ...(decodeJson(message.data) as Omit<DeadLetter, "id">) };
}
