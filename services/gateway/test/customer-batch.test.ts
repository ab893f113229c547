import { createInProcessBroker } from "@cheese/messaging";
import { ManualClock } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import { testGateway } from "./support.ts";

describe("batch registration's shape", () => {
  it("refuses a batch whose elements carry unknown fields with a quick 422 naming [index].field, asking no service", async () => {
    const { app, bus, cleanup } = await testGateway();
    let asked = 0;
    bus.serve("customer.customer.register_batch", { queue: "customer" }, async () => {
      asked++;
      return { created: [], errors: [] };
    });
    const element: Record<string, unknown> = {
      username: "probe_1",
      email: "probe@example.com",
      password: "correct horse battery",
    };
    for (let i = 0; i < 900; i++) element[`k${i}`] = 1;
    const started = Date.now();
    const response = await app.request("/v2/customer/createMultiple", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ ...element, username: "fine_one", k0: undefined }, ...Array(99).fill(element)]),
    });
    expect(response.status).toBe(422);
    expect(Date.now() - started).toBeLessThan(1_000);
    const body = (await response.json()) as { errors: { field: string; message: string }[] };
    expect(body).toMatchObject({ code: 422, type: "validation_error" });
    // The first 20 are listed, then a count of the rest: 899 in the first element, 900 in each other.
    expect(body.errors).toContainEqual({ field: "[0].k1", message: "unknown field" });
    expect(body.errors.at(-1)).toEqual({
      field: "(body)",
      message: "89979 more errors not listed (89999 in all)",
    });
    expect(body.errors.some((e: { field: string }) => e.field === "[0].k0")).toBe(false);
    expect(asked).toBe(0);
    cleanup();
  });

  it("counts each element against the caller's rate limit: a free-plan batch cannot probe 100 emails at once", async () => {
    const clock = new ManualClock(new Date("2026-11-26T12:00:00Z"));
    const { app, bus, cleanup } = await testGateway(createInProcessBroker().connect("gateway"), 1000, {
      rateLimits: specPlanLimits,
      clock,
    });
    let asked = 0;
    bus.serve("customer.customer.register_batch", { queue: "customer" }, async () => {
      asked++;
      return { created: [], errors: [] };
    });
    const batch = (count: number) =>
      app.request("/v2/customer/createMultiple", {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.7" },
        body: JSON.stringify(
          Array.from({ length: count }, (_, i) => ({
            username: `probe_${count}_${i}`,
            email: `probe${i}@example.com`,
            password: "correct horse battery",
          })),
        ),
      });
    // More than the free plan's burst of 10 at once: never admissible, so not a 429 to retry.
    const tooMany = await batch(100);
    expect(tooMany.status).toBe(422);
    expect(((await tooMany.json()) as { message: string }).message).toContain(
      "a batch of 100 registrations counts as 100 requests; the free plan allows bursts of 10",
    );
    expect(asked).toBe(0);
    // Six of ten tokens (the 422 spent one), then six more than the four left: 429, asked once.
    const first = await batch(6);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-remaining")).toBe("3");
    const second = await batch(6);
    expect(second.status).toBe(429);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await second.json()) as { code: number; type: string }).toMatchObject({
      code: 429,
      type: "rate_limited",
    });
    expect(asked).toBe(1);
    cleanup();
  });
});
