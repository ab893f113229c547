import { type Cheese, type CustomerFields, findCheese } from "@cheese/contracts";
import type { MessageBus } from "@cheese/messaging";
import { contextHeaders, DomainError, type RequestContext } from "@cheese/service-kit";
import type { FavouriteRef } from "../domain/customer.ts";

/** Reads catalogue cheeses, within a deadline shorter than the gateway's own. */
export type CheeseLookup = (cheeseId: number, context: RequestContext) => Promise<Cheese | undefined>;

export function catalogueLookup(bus: MessageBus, timeoutMs: number): CheeseLookup {
  return (cheeseId, context) => findCheese(bus, cheeseId, { timeoutMs, headers: contextHeaders(context) });
}

/** `{id}` must name a catalogue cheese (its name is kept for when it is deleted); `{name}` is kept as is. */
export async function favouriteFromInput(
  lookup: CheeseLookup,
  input: CustomerFields["favouriteCheese"],
  context: RequestContext,
): Promise<{ ref: FavouriteRef | null; cheese?: Cheese }> {
  if (!input) return { ref: null };
  if ("name" in input) return { ref: { name: input.name } };
  const cheese = await lookup(input.id, context);
  if (!cheese) {
    throw new DomainError(422, "validation_error", "favouriteCheese names no catalogue cheese", [
      { field: "favouriteCheese.id", message: `no cheese with id ${input.id}` },
    ]);
  }
  return { ref: { id: cheese.id, name: cheese.name }, cheese };
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
