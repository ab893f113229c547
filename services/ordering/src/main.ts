import { catalogueEvents, type Order, orderingRpc } from "@cheese/contracts";
import { consumeEvents } from "@cheese/messaging";
import {
  baseConfigShape,
  contextFromHeaders,
  contextLogger,
  duration,
  IdAllocator,
  isEntryPoint,
  runAsProcess,
  type ServiceDefinition,
  type StartOptions,
  startProjection,
  startPublisher,
  startService,
} from "@cheese/service-kit";
import { z } from "zod";
import { catalogueOverBus } from "./catalogue.ts";
import { cancelOrdersOfDeletedCheese } from "./handlers/cheese-deleted.ts";
import { cancelOrder, changeOrder } from "./handlers/order-commands.ts";
import { activeOrdersForCheese, getOrder, listOrders } from "./handlers/order-queries.ts";
import { createReviewScheduler, reviewOrder } from "./handlers/order-review.ts";
import { placeOrder } from "./handlers/place-order.ts";
import { toIntegrationEvent } from "./integration-events.ts";
import { ORDERS, type OrderDocument, projectOrder } from "./projections/orders.ts";

const configSchema = z.object({
  ...baseConfigShape,
  /** decisions.md: how long after placement an order is checked again and approved or cancelled. */
  ORDER_AUTO_APPROVE_DELAY: duration("0s"),
});
type OrderingConfig = z.infer<typeof configSchema>;

export const orderingService: ServiceDefinition<OrderingConfig> = {
  name: "ordering",
  configSchema,
  needs: { eventStore: true, readModels: true },
  async start(ctx) {
    const { eventStore: store, readModels, logger, bus, config } = ctx;
    const catalogue = catalogueOverBus(bus, config.RPC_TIMEOUT);

    // The process manager: every placed order gets a review ORDER_AUTO_APPROVE_DELAY after
    // placement. Its schedule is the set of placed orders, so it follows the projection.
    const reviews = createReviewScheduler({
      delayMs: config.ORDER_AUTO_APPROVE_DELAY,
      review: (orderId) => reviewOrder(store, catalogue, orderId),
      logger,
    });
    ctx.onStop(reviews);
    let live = false;
    const projection = await startProjection({
      name: "orders",
      eventStore: store,
      readModels,
      categories: ["order"],
      logger,
      async apply(event, models) {
        await projectOrder(event, models);
        if (!live) return;
        const { order } = event.data as { order: Order };
        if (order.status === "placed") reviews.schedule(order.id, order.createdAt);
        else reviews.forget(order.id);
      },
    });
    ctx.onStop(projection);
    await projection.ready;
    live = true;
    for (const { order } of await readModels.collection<OrderDocument>(ORDERS).find({ status: "placed" })) {
      reviews.schedule(order.id, order.createdAt);
    }

    ctx.onStop(
      await startPublisher({
        service: "ordering",
        eventStore: store,
        bus,
        categories: ["order"],
        toIntegrationEvent,
        logger,
      }),
    );

    const readSide = { store, readModels, projection };
    ctx.onStop(
      consumeEvents(bus, {
        durable: "ordering-cheese-deleted",
        events: [catalogueEvents.cheeseDeleted],
        async handler(event) {
          const context = contextFromHeaders(event.headers);
          const cancelled = await cancelOrdersOfDeletedCheese(
            readSide,
            event.payload.cheeseId,
            context,
            event.id,
          );
          contextLogger(logger, context).info(
            { cheeseId: event.payload.cheeseId, cancelled },
            "cheese deleted",
          );
        },
        onInvalid: (event, error) =>
          logger.error({ err: error, eventId: event.id }, "invalid cheese.deleted dropped"),
      }),
    );

    const placement = { store, orderIds: new IdAllocator(store, "order"), catalogue };
    ctx.serve(orderingRpc.placeOrder, async ({ fields, owner, idempotency }, context) => ({
      order: await placeOrder(placement, fields, owner, context, idempotency),
    }));
    ctx.serve(orderingRpc.getOrder, async ({ orderId, viewer }) => ({
      order: await getOrder(readSide, orderId, viewer),
    }));
    ctx.serve(orderingRpc.listOrders, (request) => listOrders(readSide, request));
    ctx.serve(orderingRpc.cancelOrder, async ({ orderId, viewer }, context) => ({
      order: await cancelOrder(store, orderId, viewer, context),
    }));
    ctx.serve(orderingRpc.shipOrder, async ({ orderId, ...shipment }, context) => ({
      order: await changeOrder(store, orderId, { type: "ShipOrder", ...shipment }, context),
    }));
    ctx.serve(orderingRpc.deliverOrder, async ({ orderId }, context) => ({
      order: await changeOrder(store, orderId, { type: "DeliverOrder" }, context),
    }));
    ctx.serve(orderingRpc.activeOrdersForCheese, async ({ cheeseId }) => ({
      activeOrders: await activeOrdersForCheese(readSide, cheeseId),
    }));
  },
};

export const start = (options?: StartOptions) => startService(orderingService, options);

if (isEntryPoint(import.meta.url)) void runAsProcess(start);
