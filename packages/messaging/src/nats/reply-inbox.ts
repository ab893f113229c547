/**
 * Requests and their replies through one inbox subscription, and JetStream publishes through it.
 */

import { askAgain } from "@cheese/ask-again";
import { type ApiError, createInbox, ErrorCode, type NatsConnection, NatsError } from "nats";
import { decodeJson } from "../json.ts";
import {
  closedForRequests,
  type Headers,
  NoRespondersError,
  RemoteError,
  RequestTimeoutError,
} from "../port.ts";
import { apiErrorCode, DUPLICATE_IN_PROCESS } from "./errors.ts";
import { encodedHeaders } from "./headers.ts";

/** An empty body: a lease record's (its header is all it holds), a stream info request's. */
export const EMPTY = new Uint8Array(0);

/**
 * A reply larger than the server's `max_payload` (1 MiB by default) travels in parts of at most
 * that size less {@link PART_HEADROOM} (room for the part header), each marked `<n>/<count>` in
 * this header; the caller's {@link ReplyInbox} joins them. A reply that fits goes as one message
 * without the header, so small replies pay nothing for it.
 */
export const REPLY_PART_HEADER = "x-reply-part";
export const PART_HEADROOM = 1_024;
/** nats-server's default `max_payload`, for a connection that has not told its own yet. */
export const DEFAULT_MAX_PAYLOAD = 1_048_576;

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
export class ReplyInbox {
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

export function malformedReply(subject: string): RemoteError {
  return new RemoteError({ status: 500, type: "internal_error", message: `malformed reply on ${subject}` });
}

/** What JetStream answers a stored message with (its PubAck). */
export interface PubAck {
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
export function publishToStream(...message: Parameters<typeof publishOnce>): Promise<PubAck> {
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
