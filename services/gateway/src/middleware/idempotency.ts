import { createHash } from "node:crypto";
import type { IdempotencyKey } from "@cheese/service-kit";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";

/**
 * `Idempotency-Key` for POST routes (docs/api.md "Idempotency-Key"), the HTTP half: checks the
 * header (400 unless 1 to 255 visible ASCII characters) and scopes it to the caller, for the route
 * to pass down (`idempotencyOf(c)`). The service owning the write keeps the one record of the key
 * (the service kit's `claimOnce`: the claim, its takeover, its 24 h), answers a repeat with the
 * first answer (`replayed`, which the route turns into `Idempotent-Replayed: true`) and the same
 * key with another body with 409.
 *
 * Apply it per route after the access rule (the key is scoped to the authenticated caller, and
 * to the customer when a client acts for one): `secured(rule, deps.authorize, route,
 * idempotency())`.
 */

const HEADER = "idempotency-key";
const acceptableKey = /^[\x21-\x7e]{1,255}$/;

const scopes = new WeakMap<Request, IdempotencyKey>();

/** The scoped key of the current request, when it carries an Idempotency-Key. */
export function idempotencyOf(c: Context<GatewayEnv>): { idempotency?: IdempotencyKey } {
  const scope = scopes.get(c.req.raw);
  return scope ? { idempotency: scope } : {};
}

/** Marks an answer that repeats the first answer of its Idempotency-Key. */
export function markReplayed(c: Context<GatewayEnv>, reply: { replayed?: true }): void {
  if (reply.replayed) c.header("Idempotent-Replayed", "true");
}

export function idempotency(): MiddlewareHandler<GatewayEnv> {
  return createMiddleware<GatewayEnv>(async (c, next) => {
    const sent = c.req.header(HEADER);
    if (sent === undefined) return next();
    if (!acceptableKey.test(sent)) {
      return errorResponse(c, 400, "Idempotency-Key must be 1 to 255 visible ASCII characters");
    }
    const caller = c.get("caller");
    scopes.set(c.req.raw, {
      // Per caller, and per customer within a caller: every customer of one OAuth client shares
      // the client's identity for rate limits, but never each other's keys.
      key: sha256(`${caller.id}\n${caller.customer?.id ?? ""}\n${sent}`),
      fingerprint: sha256(`${c.req.method} ${c.req.path}\n${canonical(await c.req.text())}`),
    });
    return next();
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
