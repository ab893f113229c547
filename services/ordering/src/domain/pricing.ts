import type { Cheese, Order, OrderFields } from "@cheese/contracts";
import { validationFailed } from "@cheese/service-kit";

/**
 * Pricing an order: every line checked against the cheese as the catalogue has it now, prices
 * fixed, the total computed in exact cents. Pure: the cheeses and the time are passed in.
 */

/** Why a line cannot be ordered now, or undefined when it can. */
export function unorderable(cheeseId: number, cheese: Cheese | undefined): string | undefined {
  if (!cheese) return `cheese ${cheeseId} does not exist`;
  if (cheese.status !== "available") return `cheese ${cheeseId} is ${cheese.status}, not available`;
  if (cheese.pricePerKg === undefined) return `cheese ${cheeseId} has no price`;
  return undefined;
}

/** Lines naming a cheese an earlier line names: 422, naming the later line. */
export function checkDistinctLines(fields: OrderFields): void {
  const seen = new Map<number, number>();
  const errors: { field: string; message: string }[] = [];
  fields.items.forEach((line, index) => {
    const first = seen.get(line.cheeseId);
    if (first !== undefined) {
      errors.push({
        field: `items[${index}].cheeseId`,
        message: `cheese ${line.cheeseId} is already ordered on line items[${first}]`,
      });
    } else seen.set(line.cheeseId, index);
  });
  if (errors.length > 0) throw validationFailed("order has duplicate lines", errors);
}

/**
 * The order for `fields`, each line priced from `cheeses` (the catalogue's answer for the line at
 * the same index). Every line that cannot be ordered is reported at once (422).
 */
export function priceOrder(
  fields: OrderFields,
  cheeses: readonly (Cheese | undefined)[],
  at: string,
): Omit<Order, "id"> {
  checkDistinctLines(fields);
  const errors = fields.items.flatMap((line, index) => {
    const problem = unorderable(line.cheeseId, cheeses[index]);
    return problem ? [{ field: `items[${index}].cheeseId`, message: problem }] : [];
  });
  if (errors.length > 0) throw validationFailed("some lines cannot be ordered", errors);
  const items = fields.items.map((line, index) => {
    const cheese = cheeses[index] as Cheese & { pricePerKg: number };
    return {
      cheeseId: line.cheeseId,
      cheeseName: cheese.name,
      quantity: line.quantity,
      pricePerKg: cheese.pricePerKg,
    };
  });
  return {
    items,
    shippingAddress: fields.shippingAddress,
    status: "placed",
    notes: fields.notes,
    total: orderTotal(items),
    shipDate: null,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * The total is Σ quantity × pricePerKg, rounded to cents. Floats would drift
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
