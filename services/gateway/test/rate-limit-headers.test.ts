import { createInProcessBroker } from "@cheese/messaging";
import { SharedBuckets } from "@cheese/rate-limits";
import { createLogger } from "@cheese/service-kit";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import type { Caller, GatewayEnv } from "../src/env.ts";
import { rateLimit } from "../src/middleware/rate-limit.ts";

describe("limit headers on every counted answer", () => {
  const limits = {
    free: { burst: 10, perHour: 100 },
    pro: specPlanLimits.pro,
    enterprise: specPlanLimits.enterprise,
  };

  function app() {
    const buckets = new SharedBuckets(
      createInProcessBroker().connect("gateway"),
      createLogger("test", "silent"),
    );
    const hono = new Hono<GatewayEnv>();
    hono.use(async (c, next) => {
      const caller: Caller = {
        kind: "anonymous",
        id: "ip:10.0.0.9",
        plan: "free",
        scopes: new Set(),
        via: "none",
      };
      c.set("caller", caller);
      await next();
    });
    hono.use(rateLimit({ plans: limits, buckets }));
    hono.get("/json", (c) => c.json({ ok: true }));
    hono.get("/own", () => new Response("made by the handler", { status: 200 }));
    hono.get("/fixed", () => Response.redirect("http://127.0.0.1:9/elsewhere", 302));
    hono.get("/override", (c) => {
      c.header("X-Rate-Limit", "7");
      return c.json({ ok: true });
    });
    return hono;
  }

  it("carries them whether the handler used the context, built its own Response, or one it cannot change", async () => {
    const hono = app();
    for (const [path, remaining] of [
      ["/json", "9"],
      ["/own", "8"],
      ["/fixed", "7"],
    ] as const) {
      const answer = await hono.request(path);
      expect(answer.headers.get("RateLimit-Remaining"), path).toBe(remaining);
      expect(answer.headers.get("X-Rate-Limit-Remaining"), path).toBe(remaining);
      expect(answer.headers.get("X-Rate-Limit"), path).toBe("100");
      expect(answer.headers.get("RateLimit-Limit"), path).toBe("10");
    }
  });

  it("keeps a value the route set itself", async () => {
    const answer = await app().request("/override");
    expect(answer.headers.get("X-Rate-Limit")).toBe("7");
    expect(answer.headers.get("RateLimit-Remaining")).toBe("9");
  });
});
