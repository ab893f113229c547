import type { RatePlan } from "@cheese/contracts";
import { type Admission, hourlyRate, type PlanLimits, type SharedBuckets } from "@cheese/rate-limits";
import { counter, seriesOf } from "@cheese/service-kit";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import { errorResponse, refusal } from "../errors.ts";
import { setAnswerHeader } from "./answer-headers.ts";

const refusals = counter({
  name: "cheese_rate_limit_refusals_total",
  help: "Requests refused with 429 because the caller's bucket was empty, by the caller's plan (pages: an address's browser-page bucket)",
  labelNames: ["plan"],
});
const refusalsOf = seriesOf((plan) => refusals.labels(plan));

/**
 * Monitoring must never be throttled: health probes are not counted and carry no limit headers
 * (they are not part of the API, and load balancers poll them constantly).
 */
const EXEMPT = new Set(["/healthz", "/readyz"]);

/**
 * The pages a person opens in a browser, and what they load: the API reference (`/docs`, its
 * assets and the document it renders), the operator console (pages, stylesheet, sign-in) and the
 * favicon. They are not API traffic: an anonymous visitor's requests there spend a bucket of
 * their own per address, {@link browserPageLimits}, never the anonymous API plan's; what the
 * console asks of `/v2` for a signed-in operator spends that operator key's bucket, as any call
 * with the key (or the key's operator session token) does.
 */
export function isBrowserPage(path: string): boolean {
  return (
    path === "/docs" ||
    path.startsWith("/docs/") ||
    path === "/console" ||
    path.startsWith("/console/") ||
    path === "/favicon.ico" ||
    path === "/v2/openapi.json"
  );
}

/**
 * Per client address, on the browser pages above (docs/identity.md "Rate limits"): generous for
 * a person (the reference loads 6 files, a console page 1 to 3), a bound against a script.
 */
export const browserPageLimits: PlanLimits = { burst: 300, perHour: 3600 };

/**
 * Rate limits (docs/identity.md): a token bucket per caller (operator key, customer key, OAuth client,
 * customer, or client IP) sized by the caller's plan, shared by all replicas. Every counted
 * response carries RateLimit-Limit/-Remaining/-Reset and X-Rate-Limit/-Remaining; a refused
 * request gets 429 with Retry-After.
 */
export function rateLimit(options: {
  plans: Record<RatePlan, PlanLimits>;
  buckets: SharedBuckets;
  /** The browser pages' per-address limits; {@link browserPageLimits} by default. */
  pageLimits?: PlanLimits;
}) {
  const pageLimits = options.pageLimits ?? browserPageLimits;
  return createMiddleware<GatewayEnv>(async (c, next) => {
    if (EXEMPT.has(c.req.path)) return next();
    const caller = c.get("caller");
    const page = isBrowserPage(c.req.path);
    const pageVisitor = page && caller.kind === "anonymous";
    const limits = pageVisitor ? pageLimits : options.plans[caller.plan];
    // Decided here (not a promise) while this replica's view of the bucket holds: no turn waited.
    const admitted = options.buckets.admit(pageVisitor ? `page:${caller.id}` : caller.id, limits);
    const admission = admitted instanceof Promise ? await admitted : admitted;
    const headers = limitHeaders(limits, admission);
    if (!admission.allowed) {
      for (const [name, value] of Object.entries(headers)) c.header(name, value);
      refusalsOf(pageVisitor ? "pages" : caller.plan).inc();
      c.header("Retry-After", String(admission.retryAfterSeconds));
      const allowance = allowanceOf(limits);
      const message = pageVisitor
        ? `too many requests from your address: pages allow ${allowance}; retry in ${admission.retryAfterSeconds} s`
        : `rate limit exceeded: the ${caller.plan} plan allows ${allowance}; retry in ${admission.retryAfterSeconds} s`;
      return page ? tooManyRequestsPage(c, message) : errorResponse(c, 429, message);
    }
    if (!page) {
      c.set("spend", async (more, what) => {
        if (more <= 0) return;
        const counted = `${what} counts as ${more + 1} requests`;
        if (more + 1 > limits.burst) {
          const message = `${counted}; the ${caller.plan} plan allows bursts of ${limits.burst}: send at most ${limits.burst} at once`;
          throw refusal(422, message, [{ field: "(body)", message }]);
        }
        const taken = await Promise.all(
          Array.from({ length: more }, () => options.buckets.admit(caller.id, limits)),
        );
        const refused = taken.find(({ allowed }) => !allowed);
        for (const [name, value] of Object.entries(limitHeaders(limits, refused ?? taken.at(-1)!)))
          c.header(name, value);
        if (!refused) return;
        refusalsOf(caller.plan).inc();
        c.header("Retry-After", String(refused.retryAfterSeconds));
        throw refusal(
          429,
          `rate limit exceeded: ${counted}, the ${caller.plan} plan allows ${allowanceOf(limits)}; retry in ${refused.retryAfterSeconds} s`,
        );
      });
    }
    await next();
    // Set on the answer once it is made, whoever made it (set before it too, they cost five
    // header writes more per request for the same answer); a route's own value is kept.
    for (const name in headers) setAnswerHeader(c, name, headers[name]!, IF_ABSENT);
  });
}

const IF_ABSENT = { ifAbsent: true };

function allowanceOf(limits: PlanLimits): string {
  return `bursts of ${limits.burst} and ${hourlyRate(limits)} requests an hour`;
}

/** A 429 a browser shows as a page (no script, no style, nothing from elsewhere); `message` is ours. */
function tooManyRequestsPage(c: Context<GatewayEnv>, message: string): Response {
  c.header("Content-Security-Policy", "default-src 'none'; base-uri 'none'; frame-ancestors 'none'");
  c.header("Cache-Control", "no-store");
  return c.html(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Too many requests</title></head>
<body><h1>Too many requests</h1><p>${message}</p><p>Reload the page then.</p></body></html>
`,
    429,
  );
}

export function limitHeaders(limits: PlanLimits, admission: Admission): Record<string, string> {
  return {
    "RateLimit-Limit": String(limits.burst),
    "RateLimit-Remaining": String(admission.remaining),
    "RateLimit-Reset": String(admission.resetSeconds),
    "X-Rate-Limit": String(hourlyRate(limits)),
    "X-Rate-Limit-Remaining": String(admission.remaining),
  };
}
