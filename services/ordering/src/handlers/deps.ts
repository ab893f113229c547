import type { EventStore } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import type { Clock, IdAllocator, Projection } from "@cheese/service-kit";
import type { Catalogue, CustomerVault } from "./other-services.ts";

/** What ordering's handlers work with, built once in `main.ts`. */
export interface OrderingDeps {
  store: EventStore;
  clock: Clock;
  orderIds: IdAllocator;
  catalogue: Catalogue;
  readModels: ReadModelStore;
  /** The `orders` read model. */
  projection: Projection;
  /** Seals and opens customers' addresses and notes (the customer service). */
  vault: CustomerVault;
  /**
   * Orders this process is placing, until the `orders` projection schedules their review: this
   * replica reviews them at their due time, the others only `REVIEW_TAKEOVER_MS` later (`order-review.ts`).
   */
  placedHere: Set<number>;
}
