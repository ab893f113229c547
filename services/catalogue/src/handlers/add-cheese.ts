import type { CheeseFields, CheeseReply } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import {
  claimOnce,
  contextMetadata,
  type HandlerContext,
  handleCommand,
  type IdempotencyKey,
  isoNow,
} from "@cheese/service-kit";
import { type CheeseEvent, cheeseDecider, cheeseOf, cheeseStream, replyOf } from "../domain/cheese.ts";
import type { CatalogueDeps } from "./deps.ts";
import { reserveName, resolveDetails } from "./names.ts";

/**
 * POST /cheeses: resolve the category and tag ids, claim the cheese id (for an Idempotency-Key:
 * a repeat answers with the cheese as first created, 201 with the same body and ETag, or with the
 * refusal the first request met), reserve the name within the category (409 when taken), add the
 * cheese, answer it.
 */
export async function addCheese(
  deps: CatalogueDeps,
  request: { fields: CheeseFields; idempotency?: IdempotencyKey | undefined },
  context: HandlerContext,
): Promise<CheeseReply & { replayed?: true }> {
  const metadata = contextMetadata(context);
  const details = await resolveDetails(deps, request.fields);
  const claim = await claimOnce(deps, {
    category: "cheeserequest",
    idempotency: request.idempotency,
    newId: () => deps.cheeseIds.nextId(),
    made: (cheeseId) => addedReply(deps.store, cheeseId),
    metadata,
  });
  if (claim.earlier) return claim.earlier;
  try {
    await reserveName(deps, claim.id, details, metadata);
    const at = isoNow(deps.clock);
    const { state } = await handleCommand(
      deps.store,
      cheeseStream(claim.id),
      cheeseDecider,
      { type: "AddCheese", cheese: cheeseOf(claim.id, details, at, at) },
      { metadata, newStream: true },
    );
    return replyOf(state);
  } catch (error) {
    return claim.recover(error);
  }
}

/** The cheese as it was created (the first response's body and ETag), as a replay; or undefined. */
async function addedReply(
  store: EventStore,
  cheeseId: number,
): Promise<(CheeseReply & { replayed: true }) | undefined> {
  const [first] = await store.readStream(cheeseStream(cheeseId), { maxCount: 1 });
  if (first?.type !== "CheeseAdded") return undefined;
  const { cheese } = first.data as Extract<CheeseEvent, { type: "CheeseAdded" }>["data"];
  return { cheese, revision: first.revision, replayed: true };
}
