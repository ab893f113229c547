/**
 * decisions.md: total = Σ quantity × pricePerKg, rounded to cents. Floats would drift
 * (0.1 × 3 ≠ 0.3), so prices become integers of millionths of a dollar (exact for any price
 * written with up to six decimals), lines are summed as integers, and the sum is rounded half up
 * to whole cents once. The largest order (50 lines × 100 × $1,000,000) stays below 2^53.
 */
const MICROS_PER_DOLLAR = 1_000_000;
const MICROS_PER_CENT = 10_000;

export function orderTotal(lines: readonly { quantity: number; pricePerKg: number }[]): number {
  const micros = lines.reduce(
    (sum, line) => sum + line.quantity * Math.round(line.pricePerKg * MICROS_PER_DOLLAR),
    0,
  );
  const cents = Math.floor((micros + MICROS_PER_CENT / 2) / MICROS_PER_CENT);
  return cents / 100;
}
