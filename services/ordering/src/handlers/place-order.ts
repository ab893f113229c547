import type { Order, OrderFields, OrderOwner } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import {
  claimOnce,
  contextMetadata,
  type HandlerContext,
  handleCommand,
  type IdempotencyKey,
  isoNow,
} from "@cheese/service-kit";
import {
  checkDistinctLines,
  orderDecider,
  orderStream,
  personalPart,
  priceOrder,
  redacted,
  type StoredOrder,
} from "../domain/order.ts";
import type { OrderingDeps } from "./deps.ts";
import { revealOrder } from "./other-services.ts";

/**
 * POST /store/order, top to bottom: claim the order id (for an Idempotency-Key: a repeat answers with the order
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
    creates: "order",
    metadata,
  });
  if (claim.earlier) return replayed(deps, claim.earlier, context);
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
    deps.placedHere.add(claim.id); // before the projection can see it: reviewed here first
    await handleCommand(
      deps.store,
      orderStream(claim.id),
      orderDecider,
      { type: "PlaceOrder", ...sealed, ...owner },
      { metadata, newStream: true },
    );
    return { order };
  } catch (error) {
    deps.placedHere.delete(claim.id);
    return replayed(deps, await claim.failed(error), context);
  }
}

/** The order as it was placed (the first answer's body), as a replay. */
async function replayed(
  deps: OrderingDeps,
  placed: RecordedEvent,
  context: HandlerContext,
): Promise<{ order: Order; replayed: true }> {
  return { order: await revealOrder(deps.vault, placed.data as StoredOrder, context), replayed: true };
}
