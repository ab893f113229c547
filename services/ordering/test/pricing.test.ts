import { describe, expect, it } from "vitest";
import { orderTotal } from "../src/domain/order.ts";

describe("order total", () => {
  it("sums quantity × price per kg without floating-point drift", () => {
    // In floats 0.1 × 3 + 0.2 × 3 is 0.9000000000000001.
    expect(
      orderTotal([
        { quantity: 3, pricePerKg: 0.1 },
        { quantity: 3, pricePerKg: 0.2 },
      ]),
    ).toBe(0.9);
    expect(orderTotal([{ quantity: 100, pricePerKg: 19.99 }])).toBe(1999);
  });

  it("rounds the sum (not each line) to cents, half up", () => {
    // 3 × 1.005 = 3.015 → 3.02; rounding each line first would give 3 × 1.01 = 3.03.
    expect(orderTotal([{ quantity: 3, pricePerKg: 1.005 }])).toBe(3.02);
    expect(
      orderTotal([
        { quantity: 1, pricePerKg: 0.004 },
        { quantity: 1, pricePerKg: 0.004 },
      ]),
    ).toBe(0.01);
  });

  it("stays exact for the largest possible order", () => {
    const lines = Array.from({ length: 50 }, () => ({ quantity: 100, pricePerKg: 999_999.99 }));
    expect(orderTotal(lines)).toBe(4_999_999_950);
  });
});
