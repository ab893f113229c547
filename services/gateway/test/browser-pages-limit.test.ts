import { createInProcessBroker } from "@cheese/messaging";
import type { PlanLimits } from "@cheese/rate-limits";
import { afterEach, describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import { testGateway } from "./support.ts";

/**
 * What a first visit loads of the gateway's own pages: the API reference and its files. (The
 * console's pages, forwarded to the console beside the gateway, count on the same bucket:
 * `e2e/first-visit.test.ts` walks them.)
 */
async function browserVisit(app: Awaited<ReturnType<typeof testGateway>>["app"]): Promise<number[]> {
  const docs = await app.request("/docs");
  const html = await docs.text();
  const files = [...html.matchAll(/\s(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
  const statuses = [docs.status];
  for (const path of [...files, "/v2/openapi.json", "/favicon.ico"]) {
    statuses.push((await app.request(path)).status);
  }
  return statuses;
}

/**
 * The pages a person opens are not API traffic: with the spec's anonymous plan (free, bursts of
 * 10), visiting the reference and the console several times spends nothing of the anonymous API
 * bucket; those pages have a per-address bucket of their own, whose 429 is a page.
 */
describe("the browser pages' rate limit", () => {
  let cleanup: (() => void) | undefined;
  afterEach(() => cleanup?.());
  const gateway = async (pageLimits?: PlanLimits) => {
    const started = await testGateway(createInProcessBroker().connect("gateway"), 1000, {
      rateLimits: specPlanLimits,
      ...(pageLimits ? { pageLimits } : {}),
    });
    cleanup = started.cleanup;
    return started.app;
  };

  it("lets a first visit load /docs three times over on the free anonymous plan, leaving its API bucket full", async () => {
    const app = await gateway();
    for (let visit = 0; visit < 3; visit++) {
      const statuses = await browserVisit(app);
      expect(statuses.length).toBeGreaterThan(5);
      expect(statuses).not.toContain(429);
    }
    const api = await app.request("/v2/cheeses/findByStatus?status=available");
    expect(api.headers.get("ratelimit-limit")).toBe("10");
    expect(api.headers.get("ratelimit-remaining")).toBe("9");
  });

  it("refuses a page past the per-address bucket with an HTML page and Retry-After, and the API bucket stays apart", async () => {
    const app = await gateway({ burst: 2, perHour: 1 });
    expect((await app.request("/docs")).status).toBe(200);
    expect((await app.request("/favicon.ico")).status).toBe(200);
    const refused = await app.request("/v2/openapi.json");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toMatch(/^text\/html/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const page = await refused.text();
    expect(page).toMatch(/<title>Too many requests<\/title>/);
    expect(page).toMatch(/retry in \d+ s/);
    expect((await app.request("/docs")).status).toBe(429);
    // An API call from the same address is on the anonymous plan's bucket, untouched.
    const api = await app.request("/v2/cheeses/findByStatus?status=available");
    expect(api.status).not.toBe(429);
    expect(api.headers.get("ratelimit-remaining")).toBe("9");
  });
});
