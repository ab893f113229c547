import type { Order, OrderFields, OrderOwner } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import {
  claimOnce,
  contextMetadata,
  type HandlerContext,
  handleCommand,
  type IdempotencyKey,
  isoNow,
} from "@cheese/service-kit";
import { orderDecider, orderStream } from "../domain/order.ts";
import { personalPart, redacted } from "../domain/personal-data.ts";
import { checkDistinctLines, priceOrder } from "../domain/pricing.ts";
import type { OrderingDeps } from "./deps.ts";
import { revealOrder, type StoredOrder } from "./personal-data.ts";

/**
 * POST /store/order: claim the order id (for an Idempotency-Key: a repeat answers with the order
 * as first placed, whatever the catalogue says now, or with the refusal the first request met),
 * look every line up in the catalogue, price
 * the order (422 naming each line that cannot be ordered), seal a customer's address and notes
 * under the customer's key, place it, answer it.
 */
export async function placeOrder(
  deps: OrderingDeps,
  request: { fields: OrderFields; owner: OrderOwner; idempotency?: IdempotencyKey | undefined },
  context: HandlerContext,
): Promise<{ order: Order; replayed?: true }> {
  const { fields, owner } = request;
  const metadata = contextMetadata(context);
  const claim = await claimOnce(deps, {
    category: "orderrequest",
    idempotency: request.idempotency,
    newId: () => deps.orderIds.nextId(),
    made: async (orderId) => {
      const placed = await placedOrder(deps.store, orderId);
      return placed && { order: await revealOrder(deps.vault, placed, context), replayed: true as const };
    },
    metadata,
  });
  if (claim.earlier) return claim.earlier;
  try {
    checkDistinctLines(fields); // before asking the catalogue anything
    const cheeses = await Promise.all(
      fields.items.map((line) => deps.catalogue.findCheese(line.cheeseId, context)),
    );
    const order = { ...priceOrder(fields, cheeses, isoNow(deps.clock)), id: claim.id };
    const sealed =
      owner.customerId === null
        ? { order }
        : {
            order: redacted(order),
            personal: await deps.vault.seal(owner.customerId, personalPart(order), context),
          };
    await handleCommand(
      deps.store,
      orderStream(claim.id),
      orderDecider,
      { type: "PlaceOrder", ...sealed, ...owner },
      { metadata, newStream: true },
    );
    return { order };
  } catch (error) {
    return claim.recover(error);
  }
}

/** The order as it was placed (the first response's body), or undefined when not placed yet. */
async function placedOrder(store: EventStore, orderId: number): Promise<StoredOrder | undefined> {
  const [placed] = await store.readStream(orderStream(orderId), { maxCount: 1 });
  return placed ? (placed.data as StoredOrder) : undefined;
}
