import type { BlobStore } from "@cheese/blob-store";
import {
  type CheeseChanges,
  type CheeseFields,
  type CheeseReply,
  orderingRpc,
  type Precondition,
} from "@cheese/contracts";
import { callRpc, type MessageBus, RemoteError } from "@cheese/messaging";
import { contextHeaders, DomainError, foldEvents, type HandlerContext } from "@cheese/service-kit";
import {
  type CheeseCommand,
  type CheeseDetails,
  type CheeseState,
  cheeseDecider,
  cheeseOf,
  cheeseStream,
} from "../domain/cheese.ts";
import { addCheeseOnce, type CheeseIdempotency } from "./cheese-requests.ts";
import {
  type CatalogueWriteSide,
  executeCheeseCommand,
  resolveChanges,
  resolveDetails,
} from "./cheese-writes.ts";

export interface CatalogueCommandSide extends CatalogueWriteSide {
  bus: MessageBus;
  blobs: BlobStore;
  /** Deadline for asking ordering; shorter than the gateway's so its 503 is ours to give. */
  orderingTimeoutMs: number;
}

/**
 * Adds a cheese: resolve ids, reserve the name within the category (409 when taken), append.
 * With an Idempotency-Key the id is claimed for the key first, so a repeat answers with the
 * cheese as first created (see `cheese-requests.ts`).
 */
export async function addCheese(
  side: CatalogueWriteSide & { takeoverAfterMs?: number },
  fields: CheeseFields,
  context: HandlerContext,
  idempotency?: CheeseIdempotency,
): Promise<CheeseReply> {
  const create = async (id: number, details: CheeseDetails) => {
    const now = new Date().toISOString();
    const command: CheeseCommand = { type: "AddCheese", cheese: cheeseOf(id, details, now, now) };
    return reply((await executeCheeseCommand(side, id, command, context)).state);
  };
  if (idempotency) return addCheeseOnce(side, fields, idempotency, create, context);
  const details = await resolveDetails(side, fields);
  return create(await side.cheeseIds.nextId(), details);
}

/** PUT /cheeses: every field replaced (omitted ones reset), name uniqueness kept. */
export async function replaceCheese(
  side: CatalogueWriteSide,
  request: { cheeseId: number; fields: CheeseFields; ifMatch?: Precondition | undefined },
  context: HandlerContext,
): Promise<CheeseReply> {
  const details = await resolveDetails(side, request.fields);
  const command: CheeseCommand = {
    type: "ReplaceCheese",
    details,
    at: new Date().toISOString(),
    ...(request.ifMatch !== undefined ? { ifMatch: request.ifMatch } : {}),
  };
  return reply((await executeCheeseCommand(side, request.cheeseId, command, context)).state);
}

/** POST /cheeses/{cheeseId}: only the given fields change; a status alone is a status change. */
export async function updateCheese(
  side: CatalogueWriteSide,
  request: { cheeseId: number; changes: CheeseChanges; ifMatch?: Precondition | undefined },
  context: HandlerContext,
): Promise<CheeseReply> {
  const changes = await resolveChanges(side, request.changes);
  const at = new Date().toISOString();
  const ifMatch = request.ifMatch !== undefined ? { ifMatch: request.ifMatch } : {};
  const onlyStatus = Object.keys(changes).length === 1 && changes.status !== undefined;
  const command: CheeseCommand = onlyStatus
    ? { type: "ChangeCheeseStatus", status: changes.status!, at, ...ifMatch }
    : { type: "UpdateCheese", changes, at, ...ifMatch };
  return reply((await executeCheeseCommand(side, request.cheeseId, command, context)).state);
}

/**
 * DELETE /cheeses/{cheeseId}: ordering says how many approved or shipped orders the cheese has
 * (409 when any); if ordering does not answer, nothing is deleted (503). The name is released
 * and the images' blobs removed; ordering cancels placed orders when it sees cheese.deleted.
 */
export async function deleteCheese(
  side: CatalogueCommandSide,
  request: { cheeseId: number; confirmed: boolean },
  context: HandlerContext,
): Promise<{ deleted: true }> {
  const { cheeseId, confirmed } = request;
  // Refusals that need no answer from ordering (404, 400) come first: decide as if there were
  // no orders, without appending anything.
  const current = foldEvents(cheeseDecider, await side.store.readStream(cheeseStream(cheeseId)));
  cheeseDecider.decide({ type: "DeleteCheese", confirmed, activeOrders: 0 }, current);
  const activeOrders = await askOrdering(side, cheeseId, context);
  const { events } = await executeCheeseCommand(
    side,
    cheeseId,
    { type: "DeleteCheese", confirmed, activeOrders },
    context,
  );
  for (const event of events) {
    if (event.type !== "CheeseDeleted") continue;
    for (const key of event.data.imageKeys) {
      await side.blobs.delete(key).catch((error) => context.logger.warn({ err: error, key }, "blob kept"));
    }
  }
  return { deleted: true };
}

async function askOrdering(side: CatalogueCommandSide, cheeseId: number, context: HandlerContext) {
  try {
    const answer = await callRpc(
      side.bus,
      orderingRpc.activeOrdersForCheese,
      { cheeseId },
      { timeoutMs: side.orderingTimeoutMs, headers: contextHeaders(context) },
    );
    return answer.activeOrders;
  } catch (error) {
    const detail = error instanceof RemoteError ? error.body.message : String(error);
    context.logger.warn({ cheeseId, detail }, "ordering did not say whether the cheese has active orders");
    throw new DomainError(
      503,
      "service_unavailable",
      "ordering could not confirm the cheese has no active orders; nothing was deleted",
    );
  }
}

export function reply(state: CheeseState): CheeseReply {
  if (state.phase !== "present") throw new DomainError(404, "not_found", "cheese not found");
  return { cheese: state.cheese, revision: state.revision };
}
