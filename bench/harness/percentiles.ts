/**
 * The percentiles of a set of measurements, every report of the harness by the same rule:
 * nearest rank, rounding down (of 100 values p50 is the 51st smallest, p99 the largest); NaN
 * when there are none. The values are copied and sorted once, however many are asked for.
 */
export function percentiles(values: readonly number[]): (q: number) => number {
  const sorted = [...values].sort((a, b) => a - b);
  return (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
