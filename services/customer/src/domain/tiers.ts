import type { CustomerStatus } from "@cheese/contracts";

/** The tier from the total of delivered orders, in USD (docs/identity.md "Customer accounts", tiers). */
export function tierFor(deliveredTotal: number): CustomerStatus {
  if (deliveredTotal >= 2000) return "platinum";
  if (deliveredTotal >= 500) return "gold";
  if (deliveredTotal >= 100) return "silver";
  return "bronze";
}

/** Sums money in whole cents, so a thousand orders of $0.10 make exactly $100. */
export function addMoney(a: number, b: number): number {
  return Math.round(a * 100 + b * 100) / 100;
}
