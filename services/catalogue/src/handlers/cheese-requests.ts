import type { CheeseFields, CheeseReply } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { contextMetadata, foldEvents, type HandlerContext, handleCommand } from "@cheese/service-kit";
import { type CheeseDetails, type CheeseEvent, cheeseStream } from "../domain/cheese.ts";
import {
  activeClaim,
  cheeseRequestDecider,
  cheeseRequestStream,
  keyReusedError,
} from "../domain/cheese-request.ts";
import { type CatalogueWriteSide, resolveDetails } from "./cheese-writes.ts";

/** What the gateway passes down with an Idempotency-Key (already scoped to the caller). */
export interface CheeseIdempotency {
  /** sha256 (hex) of caller id and Idempotency-Key. */
  key: string;
  /** Of method, path and canonical body; the same key with another body is 409. */
  fingerprint: string;
}

/**
 * How long after a claim a repeat waits for the claimer to create the cheese before creating it
 * itself (under the claimed id, so there is still only one). Shorter than the gateway's default
 * deadline; a repeat that arrives later than this after the claim takes over at once.
 */
export const TAKEOVER_AFTER_MS = 3000;

/**
 * POST /cheeses with an Idempotency-Key: the cheese id is claimed for the key
 * (`cheeserequest-<key>`, expected-revision append) before the cheese is created, so a retry
 * after a gateway time-out, on any replica, answers with the cheese as first created (201, the
 * same body and ETag) and never creates a second one or trips over its own name (409).
 */
export async function addCheeseOnce(
  side: CatalogueWriteSide & { takeoverAfterMs?: number },
  fields: CheeseFields,
  idempotency: CheeseIdempotency,
  create: (id: number, details: CheeseDetails) => Promise<CheeseReply>,
  context: HandlerContext,
): Promise<CheeseReply> {
  const stream = cheeseRequestStream(idempotency.key);
  const takeoverAfterMs = side.takeoverAfterMs ?? TAKEOVER_AFTER_MS;
  const requestState = foldEvents(cheeseRequestDecider, await side.store.readStream(stream));
  let claim = activeClaim(requestState, new Date().toISOString());
  if (claim && claim.fingerprint !== idempotency.fingerprint) throw keyReusedError();

  let details: CheeseDetails | undefined;
  let claimedHere = false;
  if (!claim) {
    details = await resolveDetails(side, fields);
    const candidate = await side.cheeseIds.nextId();
    const result = await handleCommand(
      side.store,
      stream,
      cheeseRequestDecider,
      {
        type: "Claim",
        cheeseId: candidate,
        fingerprint: idempotency.fingerprint,
        at: new Date().toISOString(),
      },
      { metadata: contextMetadata(context) },
    );
    claimedHere = result.newEvents.length > 0;
    // A concurrent repeat may have claimed the key first: its cheese id is the one.
    claim = result.state.claim!;
  }
  const cheeseId = claim.cheeseId;

  if (!claimedHere) {
    // Another request of this key holds the claim: give it until the takeover time to finish.
    const earlier = await waitForAdded(side.store, cheeseId, Date.parse(claim.claimedAt) + takeoverAfterMs);
    if (earlier) return earlier;
    context.logger.info({ cheeseId }, "taking over the create of an earlier request with this key");
  }
  details ??= await resolveDetails(side, fields);
  try {
    return await create(cheeseId, details);
  } catch (error) {
    // A racing request of the same key created it first (409 "cheese already exists").
    const earlier = await addedSnapshot(side.store, cheeseId);
    if (earlier) return earlier;
    throw error;
  }
}

/** The cheese as it was created (the first response's body and ETag), or undefined. */
export async function addedSnapshot(store: EventStore, cheeseId: number): Promise<CheeseReply | undefined> {
  const [first] = await store.readStream(cheeseStream(cheeseId), { maxCount: 1 });
  if (first?.type !== "CheeseAdded") return undefined;
  const { cheese } = first.data as Extract<CheeseEvent, { type: "CheeseAdded" }>["data"];
  return { cheese, revision: first.revision };
}

async function waitForAdded(
  store: EventStore,
  cheeseId: number,
  until: number,
): Promise<CheeseReply | undefined> {
  for (;;) {
    const added = await addedSnapshot(store, cheeseId);
    if (added || Date.now() >= until) return added;
    await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, until - Date.now()))));
  }
}
