import { type Cheese, findCheese } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import type { MessageBus } from "@cheese/messaging";
import type { ReadModelStore } from "@cheese/read-models";
import {
  type Clock,
  contextHeaders,
  type IdAllocator,
  type Projection,
  type RequestContext,
} from "@cheese/service-kit";
import type { CustomerVault } from "./personal-data.ts";

/** What ordering asks the catalogue: a cheese as it is now, or undefined when it does not exist. */
export interface Catalogue {
  findCheese(cheeseId: number, context: RequestContext): Promise<Cheese | undefined>;
}

/** Over the catalogue's RPC; an unreachable catalogue throws 503 (never read as "absent"). */
export function catalogueOverBus(bus: MessageBus, timeoutMs: number): Catalogue {
  return {
    findCheese: (cheeseId, context) =>
      findCheese(bus, cheeseId, { timeoutMs, headers: contextHeaders(context) }),
  };
}

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
}
