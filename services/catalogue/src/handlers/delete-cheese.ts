import { orderingRpc } from "@cheese/contracts";
import { callRpc, RemoteError } from "@cheese/messaging";
import {
  contextHeaders,
  contextMetadata,
  foldEvents,
  type HandlerContext,
  handleCommand,
  unavailable,
} from "@cheese/service-kit";
import { cheeseDecider, cheeseStream } from "../domain/cheese.ts";
import type { CatalogueDeps } from "./deps.ts";
import { releaseOldName } from "./names.ts";

/**
 * DELETE /cheeses/{cheeseId}: ordering says how many approved or shipped orders the cheese has
 * (409 when any); if ordering does not answer, nothing is deleted (503). The name is released
 * and the images' blobs removed; ordering cancels placed orders when it sees cheese.deleted.
 */
export async function deleteCheese(
  deps: CatalogueDeps,
  request: { cheeseId: number; confirmed: boolean },
  context: HandlerContext,
): Promise<{ deleted: true }> {
  const { cheeseId, confirmed } = request;
  const metadata = contextMetadata(context);
  // Refusals that need no answer from ordering (404, 400) come first: decided as if there were
  // no orders, nothing appended.
  const current = foldEvents(cheeseDecider, await deps.store.readStream(cheeseStream(cheeseId)));
  cheeseDecider.decide({ type: "DeleteCheese", confirmed, activeOrders: 0 }, current);
  const activeOrders = await activeOrdersOf(deps, cheeseId, context);
  const deletion = await handleCommand(
    deps.store,
    cheeseStream(cheeseId),
    cheeseDecider,
    { type: "DeleteCheese", confirmed, activeOrders },
    { metadata },
  );
  await releaseOldName(deps, { before: deletion.before, after: deletion.state }, metadata, context.logger);
  for (const event of deletion.newEvents) {
    if (event.type !== "CheeseDeleted") continue;
    for (const key of event.data.imageKeys) {
      await deps.blobs.delete(key).catch((error) => context.logger.warn({ err: error, key }, "blob kept"));
    }
  }
  return { deleted: true };
}

async function activeOrdersOf(deps: CatalogueDeps, cheeseId: number, context: HandlerContext) {
  try {
    const answer = await callRpc(
      deps.bus,
      orderingRpc.activeOrdersForCheese,
      { cheeseId },
      { timeoutMs: deps.orderingTimeoutMs, headers: contextHeaders(context) },
    );
    return answer.activeOrders;
  } catch (error) {
    const detail = error instanceof RemoteError ? error.body.message : String(error);
    context.logger.warn({ cheeseId, detail }, "ordering did not say whether the cheese has active orders");
    throw unavailable("ordering could not confirm the cheese has no active orders; nothing was deleted");
  }
}
