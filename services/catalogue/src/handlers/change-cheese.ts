import type { CheeseChanges, CheeseFields, CheeseReply, Precondition } from "@cheese/contracts";
import { contextMetadata, type HandlerContext, handleCommand, isoNow } from "@cheese/service-kit";
import { type CheeseCommand, cheeseDecider, cheeseStream, replyOf } from "../domain/cheese.ts";
import type { CatalogueDeps } from "./deps.ts";
import { releaseOldName, reserveNewName, resolveChanges, resolveDetails } from "./names.ts";

interface ChangeRequest {
  cheeseId: number;
  ifMatch?: Precondition | undefined;
}

/** PUT /cheeses: every field replaced (omitted ones reset), name uniqueness kept. */
export async function replaceCheese(
  deps: CatalogueDeps,
  request: ChangeRequest & { fields: CheeseFields },
  context: HandlerContext,
): Promise<CheeseReply> {
  const details = await resolveDetails(deps, request.fields);
  const at = isoNow(deps.clock);
  return changeCheese(deps, request, { type: "ReplaceCheese", details, at, ...ifMatchOf(request) }, context);
}

/** POST /cheeses/{cheeseId}: only the given fields change; a status alone is a status change. */
export async function updateCheese(
  deps: CatalogueDeps,
  request: ChangeRequest & { changes: CheeseChanges },
  context: HandlerContext,
): Promise<CheeseReply> {
  const changes = await resolveChanges(deps, request.changes);
  const at = isoNow(deps.clock);
  const onlyStatus = Object.keys(changes).length === 1 && changes.status !== undefined;
  const command: CheeseCommand = onlyStatus
    ? { type: "ChangeCheeseStatus", status: changes.status!, at, ...ifMatchOf(request) }
    : { type: "UpdateCheese", changes, at, ...ifMatchOf(request) };
  return changeCheese(deps, request, command, context);
}

/**
 * Decides and writes the change; a cheese given a new (category, name) reserves it in the same
 * write (409 when another cheese has it) and gives the old one back after.
 */
async function changeCheese(
  deps: CatalogueDeps,
  request: ChangeRequest,
  command: CheeseCommand,
  context: HandlerContext,
): Promise<CheeseReply> {
  const metadata = contextMetadata(context);
  const change = await handleCommand(deps.store, cheeseStream(request.cheeseId), cheeseDecider, command, {
    metadata,
    alongside: (decided) => reserveNewName(deps, decided, metadata),
  });
  await releaseOldName(deps, { before: change.before, after: change.state }, metadata, context.logger);
  return replyOf(change.state);
}

const ifMatchOf = (request: ChangeRequest) =>
  request.ifMatch !== undefined ? { ifMatch: request.ifMatch } : {};
