import { createInProcessBroker } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { describe, expect, it } from "vitest";
import { ratePlansSchema, specPlanLimits } from "../src/middleware/rate-limit.ts";
import { SharedBuckets } from "../src/middleware/shared-buckets.ts";
import { hourlyRate, take } from "../src/middleware/token-bucket.ts";

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

  it("lets requests through when the shared state cannot be reached, rather than failing them", async () => {
    const bus = createInProcessBroker().connect("gateway");
    await bus.close();
    const buckets = new SharedBuckets(bus, logger);
    expect((await buckets.admit("ip:10.0.0.3", free)).allowed).toBe(true);
  });
});
