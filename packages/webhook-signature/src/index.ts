/**
 * Receiver-side verification of Cheese Store webhook deliveries. Two independent signatures
 * arrive with every delivery; checking either one is enough, checking both costs nothing:
 *
 *  - `X-Cheese-Signature: sha256=<hex>`: HMAC-SHA256 of the raw body, keyed with the secret
 *    string exactly as shown at registration (`whsec_...`, as UTF-8 bytes).
 *  - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`
 *    (Unix seconds), `webhook-signature: v1,<base64>` where the base64 is HMAC-SHA256 of
 *    `${id}.${timestamp}.${body}` keyed with the base64-decoded part of the secret after
 *    `whsec_`. The timestamp lets receivers refuse replayed requests.
 *
 * Always verify the raw bytes you received, before parsing them: a re-serialised body differs.
 * Deduplicate by the envelope's `id` (equal to `webhook-id`): a retry carries the same one.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

export type RawBody = string | Uint8Array;

/** Anything headers can be read from: a fetch `Headers`, or Node's `IncomingHttpHeaders`. */
export type HeaderSource =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, either way. Default 300 seconds. */
  toleranceSeconds?: number;
  /** The current time in milliseconds (tests). */
  now?: () => number;
}

export interface WebhookEnvelope {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

const SECRET_PREFIX = "whsec_";

/** The Standard Webhooks key: the bytes after `whsec_`, base64-decoded. */
export function standardSigningKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, "base64");
  if (key.length === 0) throw new WebhookVerificationError("the secret holds no key bytes");
  return key;
}

/** Throws unless `header` is `sha256=<hex HMAC-SHA256(secret, body)>`. */
export function verifyCheeseSignature(
  secret: string,
  body: RawBody,
  header: string | null | undefined,
): void {
  if (!header) throw new WebhookVerificationError("missing X-Cheese-Signature");
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  if (!match) throw new WebhookVerificationError("X-Cheese-Signature is not sha256=<64 hex digits>");
  const expected = cheeseMac(secret, toBytes(body));
  if (!timingSafeEqual(expected, Buffer.from(match[1]!, "hex"))) {
    throw new WebhookVerificationError("X-Cheese-Signature does not match the body");
  }
}

/** Throws unless one `v1,` signature of `webhook-signature` matches and the timestamp is recent. */
export function verifyStandardSignature(
  secret: string,
  body: RawBody,
  headers: HeaderSource,
  options: VerifyOptions = {},
): void {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not Unix seconds");
  const nowSeconds = Math.floor((options.now?.() ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError("webhook-timestamp is too far from now (a replayed request?)");
  }
  const expected = standardMac(secret, id, timestamp, toBytes(body));
  // Several space-separated signatures may be sent (key rotation); any v1 match is enough.
  for (const candidate of signatures.split(" ")) {
    const [version, value] = candidate.split(",", 2);
    if (version !== "v1" || !value) continue;
    const given = Buffer.from(value, "base64");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
  }
  throw new WebhookVerificationError("no webhook-signature matches the body");
}

/**
 * Verifies both signatures and that `webhook-id` is the envelope's id, then returns the parsed
 * envelope. Use it on the raw body, before any JSON middleware touches it.
 */
export function verifyWebhook(
  secret: string,
  body: RawBody,
  headers: HeaderSource,
  options: VerifyOptions = {},
): WebhookEnvelope {
  verifyCheeseSignature(secret, body, header(headers, "x-cheese-signature"));
  verifyStandardSignature(secret, body, headers, options);
  let envelope: WebhookEnvelope;
  try {
    envelope = JSON.parse(Buffer.from(toBytes(body)).toString("utf8")) as WebhookEnvelope;
  } catch {
    throw new WebhookVerificationError("the body is not JSON");
  }
  if (envelope.id !== header(headers, "webhook-id")) {
    throw new WebhookVerificationError("webhook-id differs from the envelope id");
  }
  return envelope;
}

/** The headers of a signed delivery, as `signWebhook` makes them. */
export type SignedHeaders = {
  "X-Cheese-Signature": string;
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
};

/**
 * Signs a body as Cheese Store does a delivery: both signatures, for the envelope `id`. For
 * testing a receiver: send `body` with these headers and it must be accepted, and refused once
 * anything changes.
 *
 * `secret` may be a list, current first, as during a secret rotation's overlap: then
 * `webhook-signature` carries one `v1,` signature per secret, space-separated (Standard
 * Webhooks), and `X-Cheese-Signature`, which has room for one, the current secret's.
 */
export function signWebhook(
  secret: string | readonly string[],
  body: RawBody,
  options: { id: string; timestampSeconds?: number },
): SignedHeaders {
  const secrets = typeof secret === "string" ? [secret] : secret;
  const [current] = secrets;
  if (current === undefined) throw new TypeError("signing needs a secret");
  const timestamp = String(options.timestampSeconds ?? Math.floor(Date.now() / 1000));
  const bytes = toBytes(body);
  const standard = secrets.map(
    (each) => `v1,${standardMac(each, options.id, timestamp, bytes).toString("base64")}`,
  );
  return {
    "X-Cheese-Signature": `sha256=${cheeseMac(current, bytes).toString("hex")}`,
    "webhook-id": options.id,
    "webhook-timestamp": timestamp,
    "webhook-signature": standard.join(" "),
  };
}

/** X-Cheese-Signature's HMAC: of the body, keyed with the secret string as shown. */
function cheeseMac(secret: string, body: Uint8Array): Buffer {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(body).digest();
}

/** The Standard Webhooks HMAC: of `{id}.{timestamp}.{body}`, keyed with the secret's bytes. */
function standardMac(secret: string, id: string, timestamp: string, body: Uint8Array): Buffer {
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), body]);
  return createHmac("sha256", standardSigningKey(secret)).update(signed).digest();
}

function toBytes(body: RawBody): Uint8Array {
  return typeof body === "string" ? Buffer.from(body, "utf8") : body;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(" ") : value;
}
