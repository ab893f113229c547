import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { counter, histogram, metricsRegistry } from "../src/metrics.ts";

/** The exposition of `name` in `registry`, under the name `as`. */
async function exposition(registry: Registry, name: string, as: string): Promise<string> {
  return (await registry.getSingleMetricAsString(name)).replaceAll(name, as);
}

describe("a metric's labelled series", () => {
  it("counts what prom-client's own series count, through a reset and a removal, and refuses what they refuse", async () => {
    const labelNames = ["method", "route", "status"] as const;
    const ours = counter({ name: "test_kept_counter_total", help: "h", labelNames });
    const registry = new Registry();
    const theirs = new Counter({
      name: "test_plain_counter_total",
      help: "h",
      labelNames,
      registers: [registry],
    });
    const run = (metric: Counter<(typeof labelNames)[number]>) => {
      const get = metric.labels("GET", "/v2/cheeses/:cheeseId", "200");
      const post = metric.labels({ method: "POST", route: "/v2/cheeses", status: "201" });
      for (let i = 0; i < 5; i++) get.inc();
      post.inc(2.5);
      post.inc(0);
      metric.inc({ method: "GET", route: "/v2/cheeses/:cheeseId", status: "200" }, 3);
      get.inc(4);
      expect(() => get.inc(-1)).toThrow();
      metric.remove("POST", "/v2/cheeses", "201");
      post.inc();
      return get;
    };
    const kept = run(ours);
    const plain = run(theirs);
    expect(await exposition(metricsRegistry, "test_kept_counter_total", "x")).toBe(
      await exposition(registry, "test_plain_counter_total", "x"),
    );
    expect(await exposition(metricsRegistry, "test_kept_counter_total", "x")).toContain(
      'x{method="GET",route="/v2/cheeses/:cheeseId",status="200"} 12',
    );
    ours.reset();
    theirs.reset();
    kept.inc(7);
    plain.inc(7);
    expect(await exposition(metricsRegistry, "test_kept_counter_total", "x")).toBe(
      await exposition(registry, "test_plain_counter_total", "x"),
    );
    expect(await exposition(metricsRegistry, "test_kept_counter_total", "x")).toContain(
      'x{method="GET",route="/v2/cheeses/:cheeseId",status="200"} 7',
    );
  });

  it("observes into the buckets, sum and count prom-client's own series do", async () => {
    const labelNames = ["subject", "outcome"] as const;
    const ours = histogram({ name: "test_kept_seconds", help: "h", labelNames });
    const registry = new Registry();
    const theirs = new Histogram({
      name: "test_plain_seconds",
      help: "h",
      labelNames,
      registers: [registry],
    });
    const values = [0, 0.001, 0.005, 0.0051, 0.3, 2.5, 10, 11, 1e9];
    const run = (metric: Histogram<(typeof labelNames)[number]>) => {
      const ok = metric.labels("cheese.get", "ok");
      const failed = metric.labels({ subject: "cheese.get", outcome: "failed" });
      for (const value of values) ok.observe(value);
      failed.observe(0.02);
      metric.observe({ subject: "cheese.get", outcome: "ok" }, 0.07);
      ok.observe(0.07);
      expect(() => ok.observe(Number.NaN)).toThrow();
      metric.reset();
      ok.observe(0.2);
      ok.observe(0.2);
      failed.observe(4);
    };
    run(ours);
    run(theirs);
    expect(await exposition(metricsRegistry, "test_kept_seconds", "x")).toBe(
      await exposition(registry, "test_plain_seconds", "x"),
    );
    ours.labels("cheese.get", "ok").observe(0.004);
    const text = await exposition(metricsRegistry, "test_kept_seconds", "x");
    expect(text).toContain('x_bucket{le="0.005",subject="cheese.get",outcome="ok"} 1');
    expect(text).toContain('x_count{subject="cheese.get",outcome="ok"} 3');
  });
});
