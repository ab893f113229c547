import type { EventStore } from "@cheese/event-store";
import type { FindOptions, ReadModelStore } from "@cheese/read-models";
import { contextFromHeaders } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { address } from "@cheese/service-testing/stand-ins";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { OrderEvent } from "../src/domain/order.ts";
import { cancelOrdersOfDeletedCheese } from "../src/handlers/cheese-deleted.ts";
import type { OrderingDeps } from "../src/handlers/deps.ts";
import { newBroker, orderingOn } from "./support.ts";

const at = "2026-11-22T10:00:00.000Z";
const placed = (orderId: number, cheeseId: number): OrderEvent => ({
  type: "OrderPlaced",
  data: {
    order: {
      id: orderId,
      items: [{ cheeseId, cheeseName: `Cheese ${cheeseId}`, quantity: 1, pricePerKg: 10 }],
      shippingAddress: address,
      status: "placed",
      notes: null,
      total: 10,
      shipDate: null,
      createdAt: at,
      updatedAt: at,
    },
    customerId: null,
    ownerId: "client:ops",
  },
});

describe("cancelling the orders of a deleted cheese", () => {
  let ordering: Awaited<ReturnType<typeof orderingOn>>;
  let store: EventStore;
  let readModels: ReadModelStore;
  /** The options of every find on the orders collection. */
  const finds: (FindOptions | undefined)[] = [];
  /** The order whose cancellation fails, once: a dependency failing part-way through. */
  let failOnce: string | undefined;

  beforeEach(async () => {
    // The service as main.ts wires it; no review falls due (a manual clock, an hour away).
    ordering = await orderingOn(
      newBroker(),
      { ORDER_AUTO_APPROVE_DELAY: "1h" },
      undefined,
      new ManualClock(at),
    );
    ({ store, readModels } = ordering.service.wired);
    // Orders 1 to 7 of cheese 5, but order 4, of cheese 6.
    for (let id = 1; id <= 7; id++) {
      await store.append(`order-${id}`, [placed(id, id === 4 ? 6 : 5)], { expectedRevision: "no_stream" });
    }
  });
  afterEach(async () => {
    await ordering.service.stop();
    ordering.dataDir.remove();
  });

  const deps = (): OrderingDeps => {
    const failing: EventStore = Object.create(store);
    failing.append = async (stream, events, options) => {
      if (stream === failOnce) {
        failOnce = undefined;
        throw new Error("event store unavailable");
      }
      return store.append(stream, events, options);
    };
    const watched: ReadModelStore = Object.create(readModels);
    watched.collection = (<T extends { _id: string | number }>(name: string) => {
      const collection = readModels.collection<T>(name);
      const spy = Object.create(collection);
      for (const method of ["find", "findReadOnly"] as const) {
        spy[method] = (filter: Record<string, unknown>, options?: FindOptions) => {
          finds.push(options);
          return collection[method](filter, options);
        };
      }
      return spy;
    }) as ReadModelStore["collection"];
    return { ...ordering.service.wired, store: failing, readModels: watched };
  };
  const cancellations = async (orderId: number) =>
    (await store.readStream(`order-${orderId}`)).filter((e) => e.type === "OrderCancelled").length;

  it("reads the orders a bounded page at a time, and a delivery failing part-way is resumed by the next: each order cancelled once, none skipped", async () => {
    const context = contextFromHeaders({});
    failOnce = "order-5";
    await expect(cancelOrdersOfDeletedCheese(deps(), 5, context, "evt-1", 2)).rejects.toThrow(
      "event store unavailable",
    );
    // Orders 1 to 3 were cancelled before the failure; the redelivery does the rest.
    expect(await cancelOrdersOfDeletedCheese(deps(), 5, context, "evt-1", 2)).toBe(3);
    for (const id of [1, 2, 3, 5, 6, 7]) expect(await cancellations(id), `order ${id}`).toBe(1);
    expect(await cancellations(4)).toBe(0);
    // A third delivery (a duplicate) changes nothing.
    expect(await cancelOrdersOfDeletedCheese(deps(), 5, context, "evt-1", 2)).toBe(0);
    expect(finds.length).toBeGreaterThan(0);
    expect(finds.every((options) => options?.limit === 2)).toBe(true);
  });
});
