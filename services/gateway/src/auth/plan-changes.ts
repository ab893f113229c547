import { customerEvents } from "@cheese/contracts";
import { type Closable, consumeEvents, type MessageBus } from "@cheese/messaging";
import type { Logger } from "@cheese/service-kit";
import type { CustomerDirectory } from "./customer-directory.ts";

const PLAN_CHANGED = "broadcast.customer.plan_changed";

/**
 * A new tier reaches every replica's plan cache at once, not when the cached plan runs out: one
 * replica takes each customer.status_changed (durable, shared) and broadcasts it; every replica
 * drops what it cached about that customer (its plan, the owner records of its API keys), so the
 * next request asks the customer service. A replica that misses a broadcast (disconnected at
 * that moment) still learns the plan within the cache's 30 s.
 */
export function followPlanChanges(bus: MessageBus, customers: CustomerDirectory, logger: Logger): Closable {
  const listening = bus.onBroadcast(PLAN_CHANGED, (payload) => {
    const customerId = (payload as { customerId?: unknown } | null)?.customerId;
    if (typeof customerId === "number") customers.refresh(customerId);
  });
  const consuming = consumeEvents(bus, {
    durable: "gateway-plan-changes",
    events: [customerEvents.customerStatusChanged],
    async handler(event) {
      customers.refresh(event.payload.customerId);
      await bus.broadcast(PLAN_CHANGED, { customerId: event.payload.customerId });
    },
    onInvalid: (event, error) =>
      logger.error({ err: error, eventId: event.id }, "invalid customer.status_changed dropped"),
  });
  return {
    async close() {
      await Promise.all([listening.close(), consuming.close()]);
    },
  };
}
