import type { Address, Order } from "@cheese/contracts";

/**
 * A customer's shipping address and notes are personal data: ordering keeps them sealed under the
 * customer's own key (the customer service holds it), and the order in its events carries them
 * redacted. Opened, they are put back; once the customer is erased they cannot be, and the order
 * answers redacted: the street and city read "[erased]", state and zip code are gone, the country
 * stays (it identifies nobody, and the Order schema needs one), the notes are null.
 */
export interface OrderPersonalData {
  shippingAddress: Address;
  notes: string | null;
}

export const ERASED = "[erased]";

export function personalPart(order: Order): OrderPersonalData {
  return { shippingAddress: order.shippingAddress, notes: order.notes };
}

export function redacted(order: Order): Order {
  return {
    ...order,
    shippingAddress: { street: ERASED, city: ERASED, country: order.shippingAddress.country },
    notes: null,
  };
}

export function revealed(order: Order, personal: OrderPersonalData): Order {
  return { ...order, shippingAddress: personal.shippingAddress, notes: personal.notes };
}
