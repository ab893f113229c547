import type { CheeseFields, CheeseReply } from "@cheese/contracts";
import { CheckedText, type ServedResult } from "@cheese/messaging";
import {
  claimOnce,
  contextMetadata,
  type HandlerContext,
  handleCommand,
  type IdempotencyKey,
  isoNow,
  reserveUnique,
} from "@cheese/service-kit";
import { cheeseDecider, cheeseName, cheeseOf, cheeseStream, replayOf, replyOf } from "../domain/cheese.ts";
import type { CatalogueDeps } from "./deps.ts";
import { resolveDetails } from "./names.ts";

/**
 * POST /cheeses, top to bottom: build the cheese (category and tag ids), claim its id once per
 * Idempotency-Key (a repeat answers with the cheese as first created, 201 with the same body and
 * ETag, or with the refusal the first request met), reserve the name within the category (409
 * when taken), handle `AddCheese` on the cheese's stream, the name's reservation appended with
 * it in one write, answer it (its JSON checked once for the answer and the relay's event).
 */
export async function addCheese(
  deps: CatalogueDeps,
  request: { fields: CheeseFields; idempotency?: IdempotencyKey | undefined },
  context: HandlerContext,
): Promise<ServedResult<CheeseReply & { replayed?: true }>> {
  const metadata = contextMetadata(context);
  const details = await resolveDetails(deps, request.fields);
  const claim = await claimOnce(deps, {
    category: "cheeserequest",
    idempotency: request.idempotency,
    newId: () => deps.cheeseIds.nextId(),
    creates: "cheese",
    metadata,
  });
  if (claim.earlier) return replayOf(claim.earlier);
  try {
    const name = reserveUnique(deps, cheeseName(claim.id, details), metadata);
    const at = isoNow(deps.clock);
    const { state } = await handleCommand(
      deps.store,
      cheeseStream(claim.id),
      cheeseDecider,
      { type: "AddCheese", cheese: cheeseOf(claim.id, details, at, at) },
      { metadata, newStream: true, alongside: [name] },
    );
    const { cheese, revision } = replyOf(state);
    // Checked once for the reply and the relay's `cheese.added`, whichever comes first.
    return {
      cheese: new CheckedText(deps.checkedCheeses.text(cheese, revision), { id: cheese.id }),
      revision,
    };
  } catch (error) {
    return replayOf(await claim.failed(error));
  }
}
