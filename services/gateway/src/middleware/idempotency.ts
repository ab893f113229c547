import { createHash } from "node:crypto";
import { type KeyValue, KvConflictError, type MessageBus } from "@cheese/messaging";
import { KEY_REUSED } from "@cheese/service-kit";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";

/**
 * `Idempotency-Key` for POST routes (docs/api.md "Idempotency-Key"): a repeat of a key by the same
 * caller within 24 h gets the first response (same status, same body) and does nothing else;
 * the same key with another body (or on another route) is 409. Records live in a NATS KV bucket,
 * so the guarantee holds across gateway replicas, and `create` is the lock: of several
 * concurrent repeats one runs, the others wait for its response.
 *
 * Apply it per route after the access rule (the record is scoped to the authenticated caller,
 * and to the customer when a client acts for one): `secured(rule, deps.authorize, route,
 * idempotency(deps))`.
 *
 * Records of a customer's requests are kept under that customer's prefix (`cust.<id>.`), so that
 * erasing the customer deletes them (`forgetCustomerRequests`): a stored response may hold
 * personal data (an order's address).
 *
 * A 5xx is not recorded (the client should retry), but the work may still have happened behind
 * a time-out; routes whose service can repeat the work pass `idempotencyOf(c)` down, so the
 * service recognises the retry (ordering and the catalogue do).
 */

const HEADER = "idempotency-key";
const BUCKET = "idempotency";
const TTL_MS = 24 * 60 * 60 * 1000;
/** Response headers that are part of "the first response"; per-request ones are set afresh. */
const REPLAYED_HEADERS = ["content-type", "location", "etag", "link", "x-total-count"];
const acceptableKey = /^[\x21-\x7e]{1,255}$/;

type StoredRecord =
  | { state: "pending"; fingerprint: string; leaseUntil: number; createdAt: number }
  | {
      state: "done";
      fingerprint: string;
      createdAt: number;
      status: number;
      headers: Record<string, string>;
      body: string;
    };

/** What a route may pass to its service so that it, too, recognises a repeat. */
export interface IdempotencyScope {
  /** sha256 (hex) of caller and key: the same key from another caller is another record. */
  key: string;
  /** sha256 (hex) of method, path and canonical JSON body. */
  fingerprint: string;
}

const scopes = new WeakMap<Request, IdempotencyScope>();

/** The scope of the current request, when it carries an Idempotency-Key. */
export function idempotencyOf(c: Context<GatewayEnv>): IdempotencyScope | undefined {
  return scopes.get(c.req.raw);
}

export function idempotency(
  deps: Pick<GatewayDeps, "bus" | "rpcTimeoutMs" | "clock">,
  options: { ttlMs?: number } = {},
): MiddlewareHandler<GatewayEnv> {
  const ttlMs = options.ttlMs ?? TTL_MS;
  // The first request of a key holds it this long; a gateway that dies meanwhile is taken over.
  const leaseMs = 2 * deps.rpcTimeoutMs + 5000;
  return createMiddleware<GatewayEnv>(async (c, next) => {
    const sent = c.req.header(HEADER);
    if (sent === undefined) return next();
    if (!acceptableKey.test(sent)) {
      return errorResponse(c, 400, "Idempotency-Key must be 1 to 255 visible ASCII characters");
    }
    const scope: IdempotencyScope = {
      // Per caller, and per customer within a caller: every customer of one OAuth client shares
      // the client's identity for rate limits, but never each other's idempotency records.
      key: sha256(`${c.get("caller").id}\n${c.get("caller").customer?.id ?? ""}\n${sent}`),
      fingerprint: sha256(`${c.req.method} ${c.req.path}\n${canonical(await c.req.text())}`),
    };
    scopes.set(c.req.raw, scope);
    const recordKey = `${ownerPrefix(c.get("caller").customer?.id)}.${scope.key}`;

    let kv: KeyValue;
    try {
      kv = await bucket(deps.bus, ttlMs);
    } catch (error) {
      c.var.log().error({ err: error }, "idempotency store unavailable");
      return errorResponse(c, 503, "the idempotency store is unavailable");
    }
    // How long this request waits for another one of its key: real time, a deadline like an RPC's.
    const giveUpAt = Date.now() + leaseMs + 1000;
    for (;;) {
      const entry = await kv.get(recordKey);
      const found = entry && parse(entry.value);
      const now = deps.clock.now().getTime();
      if (!found || now - found.createdAt >= ttlMs) {
        const claimed = await write(kv, recordKey, pending(scope, leaseMs, now), entry?.revision);
        if (claimed) break;
        continue;
      }
      if (found.fingerprint !== scope.fingerprint) {
        return errorResponse(c, 409, KEY_REUSED, { type: "conflict" });
      }
      if (found.state === "done") return replay(c, found);
      if (
        found.leaseUntil < now &&
        (await write(kv, recordKey, pending(scope, leaseMs, now), entry.revision))
      )
        break;
      if (Date.now() > giveUpAt) {
        return errorResponse(c, 409, "a request with this Idempotency-Key is still in progress", {
          type: "conflict",
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }

    await next();
    const response = c.res;
    if (response.status >= 500) {
      await kv.delete(recordKey).catch(() => {});
      return;
    }
    const record: StoredRecord = {
      state: "done",
      fingerprint: scope.fingerprint,
      createdAt: deps.clock.now().getTime(),
      status: response.status,
      headers: Object.fromEntries(
        REPLAYED_HEADERS.flatMap((name) => {
          const value = response.headers.get(name);
          return value === null ? [] : [[name, value]];
        }),
      ),
      body: await response.clone().text(),
    };
    await kv.put(recordKey, encode(record)).catch((error) => {
      c.var.log().error({ err: error }, "idempotency record not saved");
    });
  });
}

/** Deletes every idempotency record of a customer's requests (their responses may hold personal data). */
export async function forgetCustomerRequests(bus: MessageBus, customerId: string): Promise<number> {
  return (await bucket(bus, TTL_MS)).deleteMatching(`${ownerPrefix(customerId)}.*`);
}

/** `cust.<id>` for a customer's requests (the id as is when it is a safe key token), `any` else. */
function ownerPrefix(customerId: string | undefined): string {
  if (customerId === undefined) return "any";
  return /^[A-Za-z0-9_-]{1,64}$/.test(customerId) ? `cust.${customerId}` : `cust.${sha256(customerId)}`;
}

const buckets = new WeakMap<MessageBus, Promise<KeyValue>>();

function bucket(bus: MessageBus, ttlMs: number): Promise<KeyValue> {
  let opened = buckets.get(bus);
  if (!opened) {
    opened = bus.kv(BUCKET, { ttlMs });
    buckets.set(bus, opened);
    opened.catch(() => buckets.delete(bus));
  }
  return opened;
}

/** Creates the record, or replaces the stale one at `revision`; false when another got there first. */
async function write(kv: KeyValue, key: string, value: Uint8Array, revision?: number): Promise<boolean> {
  try {
    if (revision === undefined) await kv.create(key, value);
    else await kv.update(key, value, revision);
    return true;
  } catch (error) {
    if (error instanceof KvConflictError) return false;
    throw error;
  }
}

function replay(c: Context<GatewayEnv>, record: Extract<StoredRecord, { state: "done" }>): Response {
  for (const [name, value] of Object.entries(record.headers)) c.header(name, value);
  c.header("Idempotent-Replayed", "true");
  return c.body(record.body, record.status as ContentfulStatusCode);
}

function pending(scope: IdempotencyScope, leaseMs: number, now: number): Uint8Array {
  return encode({
    state: "pending",
    fingerprint: scope.fingerprint,
    leaseUntil: now + leaseMs,
    createdAt: now,
  });
}

/** The same JSON in another key order or spacing is the same request. */
function canonical(body: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(body)));
  } catch {
    return body;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const encode = (record: StoredRecord) => new TextEncoder().encode(JSON.stringify(record));

function parse(bytes: Uint8Array): StoredRecord | undefined {
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as StoredRecord;
  } catch {
    return undefined;
  }
}
