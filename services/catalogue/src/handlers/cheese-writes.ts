import type { Cheese, CheeseChanges, CheeseFields } from "@cheese/contracts";
import { type EventMetadata, type EventStore, WrongExpectedRevisionError } from "@cheese/event-store";
import { contextMetadata, foldEvents, type HandlerContext, type IdAllocator } from "@cheese/service-kit";
import {
  type CheeseChangeSet,
  type CheeseCommand,
  type CheeseDetails,
  type CheeseEvent,
  type CheeseState,
  cheeseDecider,
  cheeseStream,
} from "../domain/cheese.ts";
import { lowerName } from "../domain/listing.ts";
import { nameReservationStream } from "../domain/name-reservation.ts";
import { idForName } from "../domain/named-ids.ts";
import { releaseName, reserveName } from "./name-reservations.ts";

export interface CatalogueWriteSide {
  store: EventStore;
  cheeseIds: IdAllocator;
  nameIds: IdAllocator;
}

const ATTEMPTS = 5;

/**
 * Runs one command on a cheese: read, fold, decide, append with the read revision as the
 * expected revision. When the command gives the cheese a new (category, name), that name is
 * reserved before the append (409 when taken) and the old one released after it, so two
 * cheeses never hold one name, under PUT and partial updates as under creation. A concurrent
 * write to the cheese gives the new name back and retries on fresh state.
 */
export async function executeCheeseCommand(
  side: CatalogueWriteSide,
  cheeseId: number,
  command: CheeseCommand,
  context: HandlerContext,
): Promise<{ state: CheeseState; events: CheeseEvent[] }> {
  const metadata = contextMetadata(context);
  const stream = cheeseStream(cheeseId);
  for (let attempt = 1; ; attempt++) {
    const state = foldEvents(cheeseDecider, await side.store.readStream(stream));
    const events = cheeseDecider.decide(command, state);
    if (events.length === 0) return { state, events };
    const next = events.reduce(cheeseDecider.evolve, state);
    const before = state.phase === "present" ? nameKey(state.cheese) : undefined;
    const after = next.phase === "present" ? nameKey(next.cheese) : undefined;
    const taking = after !== undefined && after !== before;
    if (taking) await reserveName(side.store, after, cheeseId, metadata);
    try {
      await side.store.append(
        stream,
        events.map((event) => ({ type: event.type, data: event.data, metadata })),
        { expectedRevision: state.revision === -1 ? "no_stream" : state.revision },
      );
    } catch (error) {
      if (taking) await releaseUnlessHeld(side.store, after, cheeseId, metadata);
      if (!(error instanceof WrongExpectedRevisionError) || attempt >= ATTEMPTS) throw error;
      continue;
    }
    if (before !== undefined && before !== after) {
      // The write stands either way; a lost release is healed when someone next wants the name.
      await releaseName(side.store, before, cheeseId, metadata).catch((error) =>
        context.logger.warn({ err: error, cheeseId }, "could not release the old cheese name"),
      );
    }
    return { state: next, events };
  }
}

/**
 * Gives back a name this write reserved but could not use, unless a concurrent write of the same
 * cheese (a racing PUT, or a repeat of one idempotent create) has meanwhile given the cheese that
 * very name: the reservation is per cheese, so releasing it then would free a name in use.
 */
async function releaseUnlessHeld(
  store: EventStore,
  name: string,
  cheeseId: number,
  metadata: EventMetadata,
): Promise<void> {
  try {
    const now = foldEvents(cheeseDecider, await store.readStream(cheeseStream(cheeseId)));
    if (now.phase === "present" && nameKey(now.cheese) === name) return;
    await releaseName(store, name, cheeseId, metadata);
  } catch {
    // Not fatal: the write's own error is what the caller needs to see.
  }
}

function nameKey(cheese: Cheese): string {
  return nameReservationStream(cheese.category?.id, cheese.name);
}

/** Category and tag ids for the names given: one id per distinct name, case-insensitively. */
export async function resolveDetails(side: CatalogueWriteSide, fields: CheeseFields): Promise<CheeseDetails> {
  const category = fields.category ? await resolveName(side, "category", fields.category.name) : undefined;
  return {
    name: fields.name,
    ...(category ? { category } : {}),
    photoUrls: fields.photoUrls ?? [],
    tags: await resolveTags(side, fields.tags ?? []),
    status: fields.status,
    origin: fields.origin ?? null,
    ...(fields.pricePerKg !== undefined ? { pricePerKg: fields.pricePerKg } : {}),
    ...(fields.ageMonths !== undefined ? { ageMonths: fields.ageMonths } : {}),
    organic: fields.organic,
  };
}

export async function resolveChanges(
  side: CatalogueWriteSide,
  changes: CheeseChanges,
): Promise<CheeseChangeSet> {
  const { category, tags, ...rest } = changes;
  const resolved: CheeseChangeSet = {};
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) (resolved as Record<string, unknown>)[key] = value;
  }
  if (category === null) resolved.category = null;
  else if (category !== undefined) resolved.category = await resolveName(side, "category", category.name);
  if (tags !== undefined) resolved.tags = await resolveTags(side, tags);
  return resolved;
}

async function resolveName(side: CatalogueWriteSide, kind: "category" | "tag", name: string) {
  return { id: await idForName(side.store, side.nameIds, kind, name), name };
}

/** Tags named twice (in any case) are kept once, as first written. */
async function resolveTags(side: CatalogueWriteSide, tags: { name: string }[]) {
  const seen = new Set<string>();
  const distinct = tags.filter((tag) => {
    const key = lowerName(tag.name);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return Promise.all(distinct.map((tag) => resolveName(side, "tag", tag.name)));
}
