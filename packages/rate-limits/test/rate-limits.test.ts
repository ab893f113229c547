import { createInProcessBroker } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import {
  hourlyRate,
  type PlanLimits,
  perSecond,
  planLimitsSchema,
  RECONCILE_MS,
  rateLimitedNetwork,
  SharedBuckets,
  take,
} from "../src/index.ts";

/** The Cheese Store's plans, as the gateway configures them. */
const specPlanLimits: Record<"free" | "pro" | "enterprise", PlanLimits> = {
  free: { burst: 10, perHour: 100 },
  pro: { burst: 100, perHour: 10_000 },
  enterprise: { burst: 1000, perHour: "unlimited" },
};
const ratePlansSchema = planLimitsSchema(specPlanLimits);
const free = specPlanLimits.free;
const HOUR = 3_600_000;

describe("token bucket", () => {
  it("starts full: a burst of exactly the plan's capacity, counting down", () => {
    const { admissions } = take(undefined, free, 0, 12);
    expect(admissions.map((a) => a.allowed)).toEqual([...Array(10).fill(true), false, false]);
    expect(admissions.slice(0, 10).map((a) => a.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });

  it("refills at the hourly rate: free gains one request every 36 seconds", () => {
    const empty = take(undefined, free, 0, 10).state;
    expect(take(empty, free, 35_999, 1).admissions[0]!.allowed).toBe(false);
    expect(take(empty, free, 36_000, 1).admissions[0]!.allowed).toBe(true);
    expect(take(empty, free, 36_000, 2).admissions[1]!.allowed).toBe(false);
    // Never more than the burst, however long the caller was away.
    const { admissions } = take(empty, free, 10 * HOUR, 11);
    expect(admissions.filter((a) => a.allowed)).toHaveLength(10);
  });

  it("tells a refused caller when the next request will pass, and when the bucket is full", () => {
    const empty = take(undefined, free, 0, 10).state;
    const [refused] = take(empty, free, 6_000, 1).admissions;
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 30 });
    expect(refused!.resetSeconds).toBe(360 - 6);
  });

  it("spaces a bucket of one evenly: one request an interval, none saved up for a burst", () => {
    const twice = perSecond(2);
    const first = take(undefined, twice, 1000, 2);
    expect(first.admissions.map((a) => a.allowed)).toEqual([true, false]);
    expect(first.admissions[1]!.retryAfterMs).toBe(500);
    expect(take(first.state, twice, 1499, 1).admissions[0]).toMatchObject({
      allowed: false,
      retryAfterMs: 1,
    });
    expect(take(first.state, twice, 1500, 1).admissions[0]!.allowed).toBe(true);
    // Long past its last request, it still lets one through, then waits a whole interval.
    const late = take(first.state, perSecond(1000), 10_000, 2).admissions;
    expect(late.map((a) => [a.allowed, a.retryAfterMs])).toEqual([
      [true, 0],
      [false, 1],
    ]);
  });

  it("lets enterprise refill without an hourly cap yet caps bursts at 1000", () => {
    const enterprise = specPlanLimits.enterprise;
    const burst = take(undefined, enterprise, 0, 1001);
    expect(burst.admissions.filter((a) => a.allowed)).toHaveLength(1000);
    expect(take(burst.state, enterprise, 1000, 1000).admissions.every((a) => a.allowed)).toBe(true);
    expect(hourlyRate(enterprise)).toBeGreaterThan(1_000_000);
  });
});

describe("RATE_LIMIT_PLANS", () => {
  it("defaults to the spec's table and overrides only the plans it names", () => {
    expect(ratePlansSchema.parse(undefined)).toEqual(specPlanLimits);
    const table = ratePlansSchema.parse("free=50/500, enterprise=2000/unlimited");
    expect(table).toEqual({
      free: { burst: 50, perHour: 500 },
      pro: specPlanLimits.pro,
      enterprise: { burst: 2000, perHour: "unlimited" },
    });
  });

  it("refuses malformed entries", () => {
    for (const bad of ["free=10", "gold=10/100", "free=0/100", "free=10/lots"]) {
      expect(ratePlansSchema.safeParse(bad).success, bad).toBe(false);
    }
  });
});

describe("buckets shared by replicas", () => {
  const logger = createLogger("test", "silent");

  it("gives a caller its burst once in total across two replicas, even in parallel", async () => {
    const broker = createInProcessBroker();
    const replicas = [
      new SharedBuckets(broker.connect("gateway-1"), logger),
      new SharedBuckets(broker.connect("gateway-2"), logger),
    ];
    const admissions = await Promise.all(
      Array.from({ length: 40 }, (_, i) => replicas[i % 2]!.admit("ip:10.0.0.1", free)),
    );
    expect(admissions.filter((a) => a.allowed)).toHaveLength(10);
    // Another caller has a bucket of its own.
    expect((await replicas[0]!.admit("ip:10.0.0.2", free)).allowed).toBe(true);
  });

  /** A bucket big enough for a replica to decide on its own; one token a second, so time stands still. */
  const big = { burst: 200, perHour: 3600 };
  const allowed = (admissions: { allowed: boolean }[]) => admissions.filter((a) => a.allowed).length;

  it("stays exact on one replica that decides big buckets on its own", async () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const buckets = new SharedBuckets(createInProcessBroker().connect("gateway"), logger, clock);
    expect((await buckets.admit("client:big", big)).remaining).toBe(199);
    const admissions = await Promise.all(Array.from({ length: 300 }, () => buckets.admit("client:big", big)));
    expect(allowed(admissions)).toBe(199);
    // The countdown is this replica's own and exact: every remaining count once, none below 0.
    const remaining = admissions.filter((a) => a.allowed).map((a) => a.remaining);
    expect(new Set(remaining).size).toBe(199);
    expect(Math.min(...remaining)).toBe(0);
  });

  it("overshoots across two replicas by at most half the burst, and the shared bucket pays it back", async () => {
    const broker = createInProcessBroker();
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const replicas = [
      new SharedBuckets(broker.connect("gateway-1"), logger, clock),
      new SharedBuckets(broker.connect("gateway-2"), logger, clock),
    ];
    // Each replica has seen the shared key once: both may now decide on their own.
    for (const replica of replicas) expect((await replica.admit("client:shared", big)).allowed).toBe(true);
    // Before either replica's spending reaches the other, each empties the bucket as it sees it.
    let total = 2;
    for (const replica of replicas) {
      for (let i = 0; i < 250; i++) if ((await replica.admit("client:shared", big)).allowed) total++;
    }
    expect(total).toBeGreaterThan(big.burst);
    expect(total).toBeLessThanOrEqual(big.burst + big.burst / 2);

    // Within the reconciliation interval every replica's spending is in the shared key: whatever
    // was admitted beyond the burst is owed, and nobody passes until the refill has repaid it.
    await clock.advance(RECONCILE_MS);
    const kv = await broker.connect("reader").kv("rate_limits");
    const key = Buffer.from("client:shared").toString("base64url");
    const shared = async () => JSON.parse(new TextDecoder().decode((await kv.get(key))!.value));
    await expect.poll(async () => (await shared()).tokens).toBe(big.burst - total);
    // One token a second: the debt and one more token take this long from the last write.
    const due = (await shared()).at + (total - big.burst + 1) * 1000;
    await clock.advance(due - 1 - clock.now().getTime());
    expect((await replicas[0]!.admit("client:shared", big)).allowed).toBe(false);
    expect((await replicas[1]!.admit("client:shared", big)).allowed).toBe(false);
    await clock.advance(1);
    expect((await replicas[1]!.admit("client:shared", big)).allowed).toBe(true);
    expect((await replicas[0]!.admit("client:shared", big)).allowed).toBe(false);
  });

  it("lets requests through when the shared state cannot be reached, rather than failing them", async () => {
    const bus = createInProcessBroker().connect("gateway");
    await bus.close();
    const buckets = new SharedBuckets(bus, logger);
    expect((await buckets.admit("ip:10.0.0.3", free)).allowed).toBe(true);
  });
});

describe("anonymous rate-limit identity", () => {
  it("counts IPv4 callers per address and IPv6 callers per /64", () => {
    expect(rateLimitedNetwork("203.0.113.9")).toBe("203.0.113.9");
    expect(rateLimitedNetwork("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(rateLimitedNetwork("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(rateLimitedNetwork("2001:db8:1:3::1")).not.toBe(rateLimitedNetwork("2001:db8:1:2::1"));
    expect(rateLimitedNetwork("::1")).toBe("0:0:0:0::/64");
  });
});
