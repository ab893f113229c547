import type { Cheese, Order, OrderFields, OrderOwner } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import {
  contextMetadata,
  DomainError,
  foldEvents,
  type HandlerContext,
  handleCommand,
  type IdAllocator,
} from "@cheese/service-kit";
import { type Catalogue, unorderable } from "../catalogue.ts";
import { orderDecider, orderStream } from "../domain/order.ts";
import { liveClaim, orderRequestDecider, orderRequestStream } from "../domain/order-request.ts";
import { orderTotal } from "../domain/pricing.ts";

export interface PlacementDeps {
  store: EventStore;
  orderIds: IdAllocator;
  catalogue: Catalogue;
}

export interface Idempotency {
  /** Already scoped to the caller by the gateway. */
  key: string;
  /** Of the request body; the same key with another body is 409. */
  fingerprint: string;
}

/** How long a repeat waits for the first request of its key to finish before taking over. */
const TAKEOVER_AFTER_MS = 3000;

/**
 * Places an order: every line checked against the catalogue (422 naming the line), prices fixed,
 * the total computed in exact cents, OrderPlaced appended. With an idempotency key the order id
 * is claimed for the key first, so repeats of one request make one order whichever replica or
 * gateway handles them.
 */
export async function placeOrder(
  deps: PlacementDeps,
  fields: OrderFields,
  owner: OrderOwner,
  context: HandlerContext,
  idempotency?: Idempotency,
): Promise<Order> {
  const claimed = idempotency ? await claimedOrderId(deps.store, idempotency) : undefined;
  if (claimed !== undefined) {
    const earlier = await waitForPlaced(deps.store, claimed, TAKEOVER_AFTER_MS);
    if (earlier) return earlier;
  }
  const order = await priceOrder(deps, fields, context);
  const metadata = contextMetadata(context);
  let id = claimed;
  if (id === undefined) {
    id = await deps.orderIds.nextId();
    if (idempotency) {
      const claim = await handleCommand(
        deps.store,
        orderRequestStream(idempotency.key),
        orderRequestDecider,
        { type: "Claim", orderId: id, fingerprint: idempotency.fingerprint, now: new Date().toISOString() },
        { metadata: metadata },
      );
      // A concurrent repeat claimed the key first: its order id is the one to place (once).
      id = claim.state.orderId ?? id;
    }
  }
  try {
    await handleCommand(
      deps.store,
      orderStream(id),
      orderDecider,
      { type: "PlaceOrder", order: { ...order, id }, ...owner },
      { metadata: metadata },
    );
  } catch (error) {
    const earlier = idempotency && (await placedSnapshot(deps.store, id));
    if (earlier) return earlier;
    throw error;
  }
  return { ...order, id };
}

async function claimedOrderId(store: EventStore, idempotency: Idempotency): Promise<number | undefined> {
  const state = foldEvents(orderRequestDecider, await store.readStream(orderRequestStream(idempotency.key)));
  const claim = liveClaim(state, new Date().toISOString());
  if (claim && claim.fingerprint !== idempotency.fingerprint) {
    throw new DomainError(409, "conflict", "this Idempotency-Key was already used with a different request");
  }
  return claim?.orderId;
}

/** The order as it was placed (the first response's body), or undefined when not placed yet. */
async function placedSnapshot(store: EventStore, id: number): Promise<Order | undefined> {
  const [placed] = await store.readStream(orderStream(id), { maxCount: 1 });
  return placed ? (placed.data as { order: Order }).order : undefined;
}

async function waitForPlaced(store: EventStore, id: number, timeoutMs: number): Promise<Order | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const order = await placedSnapshot(store, id);
    if (order || Date.now() >= deadline) return order;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Looks every line up in the catalogue; all problems are reported at once. */
async function priceOrder(
  deps: PlacementDeps,
  fields: OrderFields,
  context: HandlerContext,
): Promise<Omit<Order, "id">> {
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
  if (errors.length > 0) throw new DomainError(422, "validation_error", "order has duplicate lines", errors);

  const cheeses = await Promise.all(
    fields.items.map((line) => deps.catalogue.findCheese(line.cheeseId, context)),
  );
  fields.items.forEach((line, index) => {
    const problem = unorderable(line.cheeseId, cheeses[index]);
    if (problem) errors.push({ field: `items[${index}].cheeseId`, message: problem });
  });
  if (errors.length > 0) {
    throw new DomainError(422, "validation_error", "some lines cannot be ordered", errors);
  }
  const items = fields.items.map((line, index) => {
    const cheese = cheeses[index] as Cheese & { pricePerKg: number };
    return {
      cheeseId: line.cheeseId,
      cheeseName: cheese.name,
      quantity: line.quantity,
      pricePerKg: cheese.pricePerKg,
    };
  });
  const now = new Date().toISOString();
  return {
    items,
    shippingAddress: fields.shippingAddress,
    status: "placed",
    notes: fields.notes,
    total: orderTotal(items),
    shipDate: null,
    createdAt: now,
    updatedAt: now,
  };
}
