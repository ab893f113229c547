import type { CheeseChanges, CheeseFields } from "@cheese/contracts";
import { type EventMetadata, WrongExpectedRevisionError } from "@cheese/event-store";
import { type AlongsideWrite, type Logger, releaseUnique, reserveUnique } from "@cheese/service-kit";
import {
  type CheeseChangeSet,
  type CheeseDetails,
  type CheeseState,
  cheeseName,
  cheeseNameStream,
  NAME_TAKEN,
  normaliseName,
} from "../domain/cheese.ts";
import type { CatalogueDeps } from "./deps.ts";

/**
 * Names in the catalogue: category and tag names resolved to their ids, and cheese names kept
 * unique within their category (the service kit's reservations).
 */

/** Category and tag ids for the names given: one id per distinct name, case-insensitively. */
export async function resolveDetails(deps: CatalogueDeps, fields: CheeseFields): Promise<CheeseDetails> {
  const category = fields.category ? await named(deps, "category", fields.category.name) : undefined;
  return {
    name: fields.name,
    ...(category ? { category } : {}),
    photoUrls: fields.photoUrls ?? [],
    tags: await namedTags(deps, fields.tags ?? []),
    status: fields.status,
    origin: fields.origin ?? null,
    ...(fields.pricePerKg !== undefined ? { pricePerKg: fields.pricePerKg } : {}),
    ...(fields.ageMonths !== undefined ? { ageMonths: fields.ageMonths } : {}),
    organic: fields.organic,
  };
}

/** The same for a partial update: only what it names. */
export async function resolveChanges(deps: CatalogueDeps, changes: CheeseChanges): Promise<CheeseChangeSet> {
  const { category, tags, ...rest } = changes;
  const resolved: CheeseChangeSet = {};
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) (resolved as Record<string, unknown>)[key] = value;
  }
  if (category === null) resolved.category = null;
  else if (category !== undefined) resolved.category = await named(deps, "category", category.name);
  if (tags !== undefined) resolved.tags = await namedTags(deps, tags);
  return resolved;
}

/** Tags named twice (in any case) are kept once, as first written. */
async function namedTags(deps: CatalogueDeps, tags: { name: string }[]) {
  const seen = new Set<string>();
  const distinct = tags.filter((tag) => {
    const key = normaliseName(tag.name);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return Promise.all(distinct.map((tag) => named(deps, "tag", tag.name)));
}

/**
 * The id of a category or tag name: the first writer of `<kind>name-<normalised name>` fixes
 * it; a racing writer reads the winner's id. The stream is never deleted nor appended to again,
 * so its id, once read, is remembered (`deps.knownNames`, at most {@link KNOWN_NAMES} of them).
 */
async function named(deps: CatalogueDeps, kind: "category" | "tag", name: string) {
  const stream = `${kind}name-${normaliseName(name)}`;
  const known = deps.knownNames.get(stream);
  if (known !== undefined) return { id: known, name };
  for (;;) {
    const [first] = await deps.store.readStream(stream, { maxCount: 1 });
    if (first) return { id: remember(deps, stream, (first.data as { id: number }).id), name };
    const id = await deps.nameIds.nextId();
    try {
      await deps.store.append(stream, [{ type: "NameIdAssigned", data: { id, name } }], {
        expectedRevision: "no_stream",
      });
      return { id: remember(deps, stream, id), name };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
  }
}

/** Names remembered at most; past that the memory starts again (names are read again). */
const KNOWN_NAMES = 10_000;

function remember(deps: CatalogueDeps, stream: string, id: number): number {
  if (deps.knownNames.size >= KNOWN_NAMES) deps.knownNames.clear();
  deps.knownNames.set(stream, id);
  return id;
}

/** `alongside` of a change: a cheese given a new (category, name) reserves it with the change. */
export function reserveNewName(
  deps: CatalogueDeps,
  change: { before: CheeseState; after: CheeseState },
  metadata: EventMetadata,
): AlongsideWrite[] {
  const { before, after } = change;
  if (after.phase !== "present") return [];
  if (before.phase === "present" && cheeseNameStream(before.cheese) === cheeseNameStream(after.cheese))
    return [];
  return [reserveUnique(deps, cheeseName(after.cheese.id, after.cheese), metadata)];
}

/**
 * After a change: the name a cheese no longer has (renamed, moved, deleted) is given back. The
 * write stands either way; a lost release heals itself (a stale reservation is taken over).
 */
export async function releaseOldName(
  deps: CatalogueDeps,
  change: { before: CheeseState; after: CheeseState },
  metadata: EventMetadata,
  logger: Logger,
): Promise<void> {
  const { before, after } = change;
  if (before.phase !== "present") return;
  const stream = cheeseNameStream(before.cheese);
  if (after.phase === "present" && cheeseNameStream(after.cheese) === stream) return;
  await releaseUnique(deps, { stream, holder: before.cheese.id, whenTaken: NAME_TAKEN }, metadata).catch(
    (error) =>
      logger.warn({ err: error, cheeseId: before.cheese.id }, "could not release the old cheese name"),
  );
}
