import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { createMemoryReadModels, type FindOptions, type ReadModelStore } from "@cheese/read-models";
import {
  contextFromHeaders,
  createLogger,
  type Projection,
  startProjection,
  systemClock,
} from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { OrderEvent } from "../src/domain/order.ts";
import { cancelOrdersOfDeletedCheese } from "../src/handlers/cheese-deleted.ts";
import type { OrderingDeps } from "../src/handlers/deps.ts";
import { ORDERS_VERSION, ordersCollection, projectOrder } from "../src/projections/orders.ts";
import { address } from "./support.ts";

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
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let readModels: ReadModelStore;
  let projection: Projection;
  /** The options of every find on the orders collection. */
  const finds: (FindOptions | undefined)[] = [];
  /** The order whose cancellation fails, once: a dependency failing part-way through. */
  let failOnce: string | undefined;

  beforeEach(async () => {
    dir = tempDir("cheese-deleted");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    readModels = createMemoryReadModels();
    projection = await startProjection({
      name: "orders",
      version: ORDERS_VERSION,
      collections: [ordersCollection],
      eventStore: store,
      readModels,
      categories: ["order"],
      apply: projectOrder,
      logger: createLogger("orders", "silent"),
    });
    await projection.ready;
    // Orders 1 to 7 of cheese 5, but order 4, of cheese 6.
    for (let id = 1; id <= 7; id++) {
      await store.append(`order-${id}`, [placed(id, id === 4 ? 6 : 5)], { expectedRevision: "no_stream" });
    }
  });
  afterEach(async () => {
    await projection.close();
    await store.close();
    dir.remove();
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
    return { store: failing, readModels: watched, projection, clock: systemClock } as unknown as OrderingDeps;
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
