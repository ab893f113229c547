import { type Cheese, findCheese } from "@cheese/contracts";
import type { MessageBus } from "@cheese/messaging";
import { contextHeaders, type RequestContext } from "@cheese/service-kit";

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

/** Why a line cannot be ordered now, or undefined when it can. */
export function unorderable(cheeseId: number, cheese: Cheese | undefined): string | undefined {
  if (!cheese) return `cheese ${cheeseId} does not exist`;
  if (cheese.status !== "available") return `cheese ${cheeseId} is ${cheese.status}, not available`;
  if (cheese.pricePerKg === undefined) return `cheese ${cheeseId} has no price`;
  return undefined;
}
