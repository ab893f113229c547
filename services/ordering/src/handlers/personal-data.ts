import { type Address, customerRpc, type Order } from "@cheese/contracts";
import { callRpc, type MessageBus } from "@cheese/messaging";
import { contextHeaders, type RequestContext } from "@cheese/service-kit";

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

const ERASED = "[erased]";

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

/**
 * The customer service seals and opens a customer's personal data under the customer's own key
 * (docs/identity.md "Erasure"): ordering never holds the key, so erasing the customer erases the
 * addresses and notes of its orders in every event ordering ever stored.
 */
export interface CustomerVault {
  seal(customerId: number, data: OrderPersonalData, context: RequestContext): Promise<string>;
  /** Each blob opened, or null when its customer is erased. */
  open(
    items: { customerId: number; sealed: string }[],
    context: RequestContext,
  ): Promise<(OrderPersonalData | null)[]>;
}

/** Over the customer service's RPC; an unreachable customer service is a 503. */
export function customerVaultOverBus(bus: MessageBus, timeoutMs: number): CustomerVault {
  return {
    async seal(customerId, data, context) {
      const { sealed } = await callRpc(
        bus,
        customerRpc.sealPersonalData,
        { customerId, purpose: "order", data: { ...data } },
        { timeoutMs, headers: contextHeaders(context) },
      );
      return sealed;
    },
    async open(items, context) {
      if (items.length === 0) return [];
      const opened = await callRpc(
        bus,
        customerRpc.openPersonalData,
        { purpose: "order", items },
        { timeoutMs, headers: contextHeaders(context) },
      );
      return opened.items as (OrderPersonalData | null)[];
    },
  };
}

/** An order as stored: redacted, with its sealed part, when a customer placed it. */
export interface StoredOrder {
  order: Order;
  customerId: number | null;
  personal?: string | undefined;
}

/**
 * Orders as callers see them: each customer's address and notes opened (one request for the
 * lot), or redacted once the customer is erased; operator orders as they are.
 */
export async function revealOrders(
  vault: CustomerVault,
  stored: readonly StoredOrder[],
  context: RequestContext,
): Promise<Order[]> {
  const sealed = stored.flatMap(({ customerId, personal }) =>
    personal !== undefined && customerId !== null ? [{ customerId, sealed: personal }] : [],
  );
  const opened = await vault.open(sealed, context);
  let next = 0;
  return stored.map(({ order, customerId, personal }) => {
    if (personal === undefined || customerId === null) return order;
    const data = opened[next++];
    return data ? revealed(order, data) : redacted(order);
  });
}

export async function revealOrder(vault: CustomerVault, stored: StoredOrder, context: RequestContext) {
  const [order] = await revealOrders(vault, [stored], context);
  return order!;
}
