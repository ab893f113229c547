import { catalogueEvents, historyRpc, type Order, orderingRpc } from "@cheese/contracts";
import { consumeEvents } from "@cheese/messaging";
import {
  contextFromHeaders,
  contextLogger,
  dueTimers,
  IdAllocator,
  type ServiceDefinition,
  type StartOptions,
  serveRebuildRequests,
  startProjection,
  startPublisher,
  startService,
} from "@cheese/service-kit";
import { type OrderingConfig, orderingConfigSchema } from "./config.ts";
import { toIntegrationEvent } from "./domain/order.ts";
import { cancelOrdersOfDeletedCheese } from "./handlers/cheese-deleted.ts";
import type { OrderingDeps } from "./handlers/deps.ts";
import { cancelOrder, changeOrder } from "./handlers/order-commands.ts";
import { orderHistory } from "./handlers/order-history.ts";
import {
  activeOrdersForCheese,
  customerOrders,
  getOrder,
  getOrderAsOf,
  listOrders,
} from "./handlers/order-queries.ts";
import { type Placement, placementOf, REVIEW_TAKEOVER_MS, reviewOrder } from "./handlers/order-review.ts";
import { catalogueOverBus, customerVaultOverBus } from "./handlers/other-services.ts";
import { placeOrder } from "./handlers/place-order.ts";

import {
  ORDERS,
  ORDERS_VERSION,
  type OrderDocument,
  ordersCollection,
  projectOrder,
} from "./projections/orders.ts";

export const orderingService: ServiceDefinition<OrderingConfig, OrderingDeps> = {
  name: "ordering",
  configSchema: orderingConfigSchema,
  needs: { eventStore: true, readModels: true },
  // The wiring of the service, production's and the tests' alike (startService runs it; what
  // it returns is `RunningService.wired`): projections, consumers, handlers' deps, RPCs.
  async start(ctx) {
    const { eventStore: store, readModels, logger, bus, config, clock } = ctx;
    const catalogue = catalogueOverBus(bus, config.RPC_TIMEOUT);
    const vault = customerVaultOverBus(bus, config.RPC_TIMEOUT);

    // The process manager: every placed order gets a review ORDER_AUTO_APPROVE_DELAY after
    // placement (the kit's due timers). Its schedule is the set of placed orders, so it follows
    // the projection.
    // The replica that placed an order reviews it; the others only if it has not done so
    // REVIEW_TAKEOVER_MS after its due time (their timer is dropped once they see the outcome).
    // Each carries the placement the projection saw, so that the review reads nothing (an order
    // found placed at start carries none: its review reads it).
    const reviews = dueTimers<number, Placement | undefined>({
      name: "order review",
      clock,
      logger,
      run: (orderId, placement) => reviewOrder({ store, clock, catalogue }, orderId, placement),
    });
    const placedHere = new Set<number>();
    const review = (order: Order, takeover: boolean, placement?: Placement) => {
      if (reviews.dueAt(order.id) !== undefined) return;
      const due = Date.parse(order.createdAt) + config.ORDER_AUTO_APPROVE_DELAY;
      reviews.set(order.id, takeover ? due + REVIEW_TAKEOVER_MS : due, placement);
    };
    ctx.onStop(reviews);
    let live = false;
    const projection = await startProjection({
      name: "orders",
      version: ORDERS_VERSION,
      collections: [ordersCollection],
      eventStore: store,
      readModels,
      categories: ["order"],
      logger,
      async apply(event, models, { rebuilding }) {
        await projectOrder(event, models);
        // Reviews follow the orders reads reach, not a rebuild beside them.
        if (!live || rebuilding) return;
        const { order } = event.data as { order: Order };
        if (order.status === "placed") review(order, !placedHere.delete(order.id), placementOf(event, order));
        else reviews.delete(order.id);
      },
    });
    ctx.onStop(projection);
    ctx.onStop(serveRebuildRequests(ctx.bus, "ordering", { orders: projection }, logger));
    await projection.ready;
    live = true;
    // Placed before this start, by this replica's predecessor or another: reviewed at their time,
    // at once if it has passed (an order placed just before a crash is reviewed now).
    for (const { order } of await readModels.collection<OrderDocument>(ORDERS).find({ status: "placed" })) {
      review(order, false);
    }

    ctx.onStop(
      await startPublisher({
        service: "ordering",
        eventStore: store,
        bus,
        categories: ["order"],
        toIntegrationEvent,
        logger,
        leaseMs: ctx.config.RELAY_LEASE,
        clock: ctx.clock,
      }),
    );

    const deps: OrderingDeps = {
      store,
      clock,
      orderIds: new IdAllocator(store, "order"),
      catalogue,
      readModels,
      projection,
      vault,
      placedHere,
    };
    ctx.onStop(
      consumeEvents(bus, {
        durable: "ordering-cheese-deleted",
        events: [catalogueEvents.cheeseDeleted],
        async handler(event) {
          const context = contextFromHeaders(event.headers);
          const cancelled = await cancelOrdersOfDeletedCheese(
            deps,
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

    ctx.serve(orderingRpc.placeOrder, deps, placeOrder);
    ctx.serve(orderingRpc.getOrder, async ({ orderId, actor }, context) => ({
      order: await getOrder(deps, orderId, actor, context),
    }));
    ctx.serve(orderingRpc.getOrderAsOf, deps, getOrderAsOf);
    ctx.serve(orderingRpc.customerOrders, ({ customerId }, context) =>
      customerOrders(deps, customerId, context),
    );
    ctx.serve(orderingRpc.listOrders, deps, listOrders);
    ctx.serve(orderingRpc.cancelOrder, async ({ orderId, actor }, context) => ({
      order: await cancelOrder(deps, orderId, actor, context),
    }));
    ctx.serve(orderingRpc.shipOrder, async ({ orderId, actor, ...shipment }, context) => ({
      order: await changeOrder(deps, orderId, { type: "ShipOrder", by: actor, ...shipment }, context),
    }));
    ctx.serve(orderingRpc.deliverOrder, async ({ orderId, actor }, context) => ({
      order: await changeOrder(deps, orderId, { type: "DeliverOrder", by: actor }, context),
    }));
    ctx.serve(historyRpc.order, (request) => orderHistory(store, request));
    ctx.serve(orderingRpc.activeOrdersForCheese, async ({ cheeseId }) => ({
      activeOrders: await activeOrdersForCheese(deps, cheeseId),
    }));
    return deps;
  },
};

export const start = (options?: StartOptions) => startService(orderingService, options);
