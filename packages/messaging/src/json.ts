/** Payloads cross the bus as JSON; `undefined` travels as an empty body. */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
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
