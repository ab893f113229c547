import { PLAN_CHANGED } from "@cheese/contracts";
import type { Closable, MessageBus } from "@cheese/messaging";
import type { CustomerDirectory } from "./customer-directory.ts";

/**
 * A new tier reaches every replica's plan cache at once, not when the cached plan runs out: the
 * customer service broadcasts each change of a customer's status, and every replica drops what it
 * cached about that customer (its plan, the owner records of its API keys), so the next request
 * asks the customer service. A replica that misses a broadcast (disconnected at that moment)
 * still learns the plan within the cache's 30 s.
 */
export function followPlanChanges(bus: MessageBus, customers: CustomerDirectory): Closable {
  return bus.onBroadcast(PLAN_CHANGED, (payload) => {
    const customerId = (payload as { customerId?: unknown } | null)?.customerId;
    if (typeof customerId === "number") customers.refresh(customerId);
  });
}
