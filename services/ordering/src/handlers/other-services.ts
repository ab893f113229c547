import { type Cheese, customerRpc, findCheese, type Order } from "@cheese/contracts";
import { callRpc, type MessageBus } from "@cheese/messaging";
import { contextHeaders, type RequestContext } from "@cheese/service-kit";
import { type OrderPersonalData, redacted, revealed, type StoredOrder } from "../domain/order.ts";

/**
 * What ordering asks of other services, over the bus: the catalogue for a cheese as it is now,
 * the customer service to seal and open a customer's personal data. Either unreachable is a 503,
 * never read as an answer.
 */

/** What ordering asks the catalogue: a cheese as it is now, or undefined when it does not exist. */
export interface Catalogue {
  findCheese(cheeseId: number, context: RequestContext): Promise<Cheese | undefined>;
}

export function catalogueOverBus(bus: MessageBus, timeoutMs: number): Catalogue {
  return {
    findCheese: (cheeseId, context) =>
      findCheese(bus, cheeseId, { timeoutMs, headers: contextHeaders(context) }),
  };
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
