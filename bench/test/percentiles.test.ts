import { describe, expect, it } from "vitest";
import { percentiles } from "../harness/percentiles.ts";

/** The p50 / p95 / p99 every table of `pnpm bench` prints (HTTP loads, webhook latencies, stages). */
describe("percentiles", () => {
  it("takes the nearest rank, rounding down, of the values in any order", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1
    const at = percentiles(hundred);
    expect(at(0.5)).toBe(51);
    expect(at(0.95)).toBe(96);
    expect(at(0.99)).toBe(100);
    expect(at(0)).toBe(1);
    expect(at(1)).toBe(100);
    expect(percentiles([7, 3])(0.5)).toBe(7);
  });

  it("leaves the measurements as they were", () => {
    const values = [3, 1, 2];
    expect(percentiles(values)(0.99)).toBe(3);
    expect(values).toEqual([3, 1, 2]);
  });

  it("is NaN with nothing measured, not a number that looks like one", () => {
    expect(percentiles([])(0.99)).toBeNaN();
  });
});
