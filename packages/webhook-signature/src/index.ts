/**
 * Receiver-side verification of Cheese Store webhook deliveries. By default two independent
 * signatures arrive with every delivery; checking either one is enough, checking both costs nothing:
 *
 *  - `X-Cheese-Signature: sha256=<hex>`: HMAC-SHA256 of the raw body, keyed with the secret
 *    string exactly as shown at registration (`whsec_...`, as UTF-8 bytes).
 *  - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`
 *    (Unix seconds), `webhook-signature: v1,<base64>` where the base64 is HMAC-SHA256 of
 *    `${id}.${timestamp}.${body}` keyed with the base64-decoded part of the secret after
 *    `whsec_`. The timestamp lets receivers refuse replayed requests.
 *
 * A registration that asks for `ed25519` (its `signatureAlgorithms`) gets `v1a,<base64 Ed25519 signature>` of the same
 * `${id}.${timestamp}.${body}` in `webhook-signature` (Standard Webhooks' asymmetric scheme),
 * made with the system's signing key, whose public half is published as a JWK set
 * (`/.well-known/webhook-keys.json`): a receiver verifies it with the JWK set alone, no secret.
 * Without `hmac-sha256` among them, `webhook-signature` carries only `v1a`; `X-Cheese-Signature`
 * is always sent.
 *
 * Always verify the raw bytes you received, before parsing them: a re-serialised body differs.
 * Deduplicate by the envelope's `id` (equal to `webhook-id`): a retry carries the same one.
 */
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  type JsonWebKey,
  KeyObject,
  sign,
  timingSafeEqual,
  verify,
} from "node:crypto";

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
  const { id, timestamp, signatures } = standardHeaders(headers, options);
  const expected = standardMac(secret, id, timestamp, toBytes(body));
  // Several space-separated signatures may be sent (key rotation); any v1 match is enough.
  for (const given of signaturesOf(signatures, "v1")) {
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
  }
  throw new WebhookVerificationError("no webhook-signature matches the body");
}

/** A JWK set as `/.well-known/webhook-keys.json` serves it. */
export interface JsonWebKeySet {
  keys: readonly JsonWebKey[];
}

/**
 * Throws unless one `v1a,` signature of `webhook-signature` is an Ed25519 signature of
 * `${webhook-id}.${webhook-timestamp}.${body}` by one of the set's keys (OKP, Ed25519), and the
 * timestamp is recent. During a rotation of the system's key two `v1a` signatures arrive and the
 * set holds both keys; a set fetched before the rotation still verifies the previous key's.
 */
export function verifyAsymmetricSignature(
  keys: JsonWebKeySet,
  body: RawBody,
  headers: HeaderSource,
  options: VerifyOptions = {},
): void {
  const { id, timestamp, signatures } = standardHeaders(headers, options);
  const publicKeys = keys.keys
    .filter((key) => key.kty === "OKP" && key.crv === "Ed25519" && typeof key.x === "string")
    .map((key) => createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: key.x }, format: "jwk" }));
  if (publicKeys.length === 0) throw new WebhookVerificationError("the key set holds no Ed25519 key");
  const signed = signedContent(id, timestamp, toBytes(body));
  for (const given of signaturesOf(signatures, "v1a")) {
    if (publicKeys.some((key) => verify(null, signed, key, given))) return;
  }
  throw new WebhookVerificationError("no v1a webhook-signature matches the body and a published key");
}

/**
 * Verifies the `v1a` signature against the published keys and that `webhook-id` is the
 * envelope's id, then returns the parsed envelope: for a registration with `ed25519` among its
 * `signatureAlgorithms`, a receiver that holds no secret at all.
 */
export function verifyWebhookWithKeys(
  keys: JsonWebKeySet,
  body: RawBody,
  headers: HeaderSource,
  options: VerifyOptions = {},
): WebhookEnvelope {
  verifyAsymmetricSignature(keys, body, headers, options);
  return envelopeOf(body, headers);
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
  return envelopeOf(body, headers);
}

function envelopeOf(body: RawBody, headers: HeaderSource): WebhookEnvelope {
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

/** A private Ed25519 key: a `KeyObject`, or a JWK (OKP, Ed25519, with `d`). */
export type Ed25519PrivateKey = KeyObject | JsonWebKey;

export interface SignOptions {
  /** The envelope id, sent as `webhook-id`. */
  id: string;
  timestampSeconds?: number;
  /** Whether `webhook-signature` carries the `v1,` HMAC signatures (default true). */
  hmac?: boolean;
  /** Ed25519 keys, current first: one `v1a,` signature each in `webhook-signature`. */
  ed25519Keys?: readonly Ed25519PrivateKey[];
}

/**
 * Signs a body as Cheese Store does a delivery, for the envelope `id`. For testing a receiver:
 * send `body` with these headers and it must be accepted, and refused once anything changes.
 *
 * `secret` may be a list, current first, as during a secret rotation's overlap: then
 * `webhook-signature` carries one `v1,` signature per secret, space-separated (Standard
 * Webhooks), and `X-Cheese-Signature`, which has room for one, the current secret's. With
 * `ed25519Keys`, one `v1a,` signature per key follows them (none of the `v1,` ones when `hmac`
 * is false); `X-Cheese-Signature` is the HMAC whatever else is asked.
 */
export function signWebhook(
  secret: string | readonly string[],
  body: RawBody,
  options: SignOptions,
): SignedHeaders {
  const secrets = typeof secret === "string" ? [secret] : secret;
  const [current] = secrets;
  if (current === undefined) throw new TypeError("signing needs a secret");
  const timestamp = String(options.timestampSeconds ?? Math.floor(Date.now() / 1000));
  const bytes = toBytes(body);
  const hmac =
    options.hmac === false
      ? []
      : secrets.map((each) => `v1,${standardMac(each, options.id, timestamp, bytes).toString("base64")}`);
  const signed = signedContent(options.id, timestamp, bytes);
  const asymmetric = (options.ed25519Keys ?? []).map(
    (key) => `v1a,${sign(null, signed, privateKeyOf(key)).toString("base64")}`,
  );
  const standard = [...hmac, ...asymmetric];
  if (standard.length === 0) throw new TypeError("signing needs the HMAC or an Ed25519 key");
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
  return createHmac("sha256", standardSigningKey(secret))
    .update(signedContent(id, timestamp, body))
    .digest();
}

/** What every Standard Webhooks signature covers: `{id}.{timestamp}.{body}`. */
function signedContent(id: string, timestamp: string, body: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), body]);
}

function privateKeyOf(key: Ed25519PrivateKey): KeyObject {
  const object = key instanceof KeyObject ? key : createPrivateKey({ key, format: "jwk" });
  if (object.asymmetricKeyType !== "ed25519") throw new TypeError("a v1a signature needs an Ed25519 key");
  return object;
}

/** The Standard Webhooks headers, present and with a timestamp within the tolerance. */
function standardHeaders(
  headers: HeaderSource,
  options: VerifyOptions,
): { id: string; timestamp: string; signatures: string } {
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
  return { id, timestamp, signatures };
}

/** The decoded signatures of one version (`v1` or `v1a`) in a space-separated header. */
function signaturesOf(signatures: string, version: "v1" | "v1a"): Buffer[] {
  return signatures.split(" ").flatMap((candidate) => {
    const [given, value] = candidate.split(",", 2);
    return given === version && value ? [Buffer.from(value, "base64")] : [];
  });
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
