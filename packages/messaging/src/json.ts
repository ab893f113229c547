/** Payloads cross the bus as JSON; `undefined` travels as an empty body. */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The JSON text of one value, checked against its schema by this process when it was made
 * (`checkedJson`), typically once per version of a document and kept, so that it is not checked
 * and encoded again where it is sent:
 * - as the body field of a reply passed through (`passThrough.body`, a field, not "."):
 *   `serveRpc` checks the rest of the reply (the response schema without that field) and sends
 *   this text as the body; `fields` are those of the value a definition's `bodyMeta` names;
 * - as an integration event's payload: the bus sends the text as the payload.
 *
 * Written into other JSON (`JSON.stringify`) as the value it is the text of.
 */
export class CheckedText {
  constructor(
    readonly text: string,
    readonly fields?: Readonly<Record<string, unknown>>,
  ) {}

  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** A {@link CheckedText} is sent as its text. */
export function encodeJson(value: unknown): Uint8Array {
  if (value instanceof CheckedText) return encoder.encode(value.text);
  return value === undefined ? new Uint8Array(0) : encoder.encode(JSON.stringify(value));
}

/** Throws SyntaxError on a malformed body. */
export function decodeJson(bytes: Uint8Array): unknown {
  return bytes.length === 0 ? undefined : JSON.parse(decoder.decode(bytes));
}

/** What the receiver of `value` would see over the wire; no shared references. */
export function copyJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

const NEWLINE = 0x0a;

/**
 * A passed-through reply on the wire: the envelope with its `meta` as `data`, a newline, then the
 * body's JSON text. JSON.stringify never writes a raw newline (nor does UTF-8 inside a character),
 * so the first newline is where the body starts; a reply without one is a plain envelope.
 */
export function encodePassedReply(meta: unknown, body: string | Uint8Array): Uint8Array {
  const head = JSON.stringify({ ok: true, data: meta });
  if (typeof body === "string") return encoder.encode(`${head}\n${body}`);
  const headBytes = encoder.encode(`${head}\n`);
  const out = new Uint8Array(headBytes.length + body.length);
  out.set(headBytes);
  out.set(body, headBytes.length);
  return out;
}

/** The envelope and body of a passed-through reply, or undefined for a plain envelope. */
export function splitPassedReply(bytes: Uint8Array): { envelope: Uint8Array; body: Uint8Array } | undefined {
  const at = bytes.indexOf(NEWLINE);
  if (at < 0) return undefined;
  return { envelope: bytes.subarray(0, at), body: bytes.subarray(at + 1) };
}
