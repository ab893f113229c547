import { type Cheese, type CustomerFields, findCheese } from "@cheese/contracts";
import type { MessageBus } from "@cheese/messaging";
import { contextHeaders, type RequestContext, validationFailed } from "@cheese/service-kit";
import type { FavouriteRef } from "../domain/customer.ts";

/** Reads catalogue cheeses, within a deadline shorter than the gateway's own. */
export type CheeseLookup = (cheeseId: number, context: RequestContext) => Promise<Cheese | undefined>;

export function catalogueLookup(bus: MessageBus, timeoutMs: number): CheeseLookup {
  return (cheeseId, context) => findCheese(bus, cheeseId, { timeoutMs, headers: contextHeaders(context) });
}

/**
 * `{id}` must name a catalogue cheese (its name is kept for when it is deleted); `{name}` is kept
 * as is. `ref` is what is stored, `shown` what the answer shows.
 */
export async function favouriteFromInput(
  lookup: CheeseLookup,
  input: CustomerFields["favouriteCheese"],
  context: RequestContext,
): Promise<{ ref: FavouriteRef | null; shown: Cheese | { name: string } | undefined }> {
  if (!input) return { ref: null, shown: undefined };
  if ("name" in input) return { ref: { name: input.name }, shown: { name: input.name } };
  const cheese = await lookup(input.id, context);
  if (!cheese) {
    throw validationFailed("favouriteCheese names no catalogue cheese", [
      { field: "favouriteCheese.id", message: `no cheese with id ${input.id}` },
    ]);
  }
  return { ref: { id: cheese.id, name: cheese.name }, shown: cheese };
}

/** The returned form: the catalogue cheese, or `{name}` when chosen by name or since deleted. */
export async function favouriteForView(
  lookup: CheeseLookup,
  ref: FavouriteRef | null,
  context: RequestContext,
): Promise<Cheese | { name: string } | undefined> {
  if (!ref) return undefined;
  if (ref.id === undefined) return { name: ref.name };
  return (await lookup(ref.id, context)) ?? { name: ref.name };
}
