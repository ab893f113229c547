import { type Cheese, catalogueRpc } from "@cheese/contracts";
import { callRpc, type MessageBus, RemoteError } from "@cheese/messaging";
import { contextHeaders, type RequestContext } from "@cheese/service-kit";

/** What ordering asks the catalogue: a cheese as it is now, or undefined when it does not exist. */
export interface Catalogue {
  findCheese(cheeseId: number, context: RequestContext): Promise<Cheese | undefined>;
}

/** Over the catalogue's RPC; an unreachable catalogue throws 503 (never read as "absent"). */
export function catalogueOverBus(bus: MessageBus, timeoutMs: number): Catalogue {
  return {
    async findCheese(cheeseId, context) {
      try {
        const { cheese } = await callRpc(
          bus,
          catalogueRpc.getCheese,
          { cheeseId },
          { timeoutMs, headers: contextHeaders(context) },
        );
        return cheese;
      } catch (error) {
        if (error instanceof RemoteError && error.body.status === 404) return undefined;
        throw error;
      }
    },
  };
}

/** Why a line cannot be ordered now, or undefined when it can. */
export function unorderable(cheeseId: number, cheese: Cheese | undefined): string | undefined {
  if (!cheese) return `cheese ${cheeseId} does not exist`;
  if (cheese.status !== "available") return `cheese ${cheeseId} is ${cheese.status}, not available`;
  if (cheese.pricePerKg === undefined) return `cheese ${cheeseId} has no price`;
  return undefined;
}
