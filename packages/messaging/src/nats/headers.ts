/**
 * Message headers as the bus sends and reads them, without nats.js's per-message header objects.
 */
import { ErrorCode, type Msg, type MsgHdrs, NatsError } from "nats";
import type { Headers } from "../port.ts";

/** Carries the event id next to `Nats-Msg-Id`, which the server may strip on republish. */
export const EVENT_ID_HEADER = "x-event-id";

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
export function encodedHeaders(headers: Headers): MsgHdrs {
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
export function receivedHeaders(msg: Msg): Headers {
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
export function headersOfText(text: string): Headers {
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

export function fromNatsHeaders(h: MsgHdrs | undefined): Headers {
  const out: Headers = {};
  for (const [key, values] of h ?? []) out[key] = values[0] ?? "";
  return out;
}
