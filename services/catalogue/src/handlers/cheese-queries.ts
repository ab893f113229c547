import type {
  CheeseFilters,
  CheeseImage,
  CheeseList,
  CheeseReply,
  CheeseSort,
  CheeseStatus,
  Inventory,
} from "@cheese/contracts";
import { CheckedText, CheckedTexts, type ServedResult } from "@cheese/messaging";
import { foldStreamAsOf, notFound } from "@cheese/service-kit";
import { cheeseDecider, cheeseStream } from "../domain/cheese.ts";
import {
  afterQuery,
  encodeCursor,
  filterQuery,
  normaliseFilters,
  resolveListRequest,
  sortSpec,
} from "../domain/listing.ts";
import { CHEESES, type CheeseDocument } from "../projections/cheeses.ts";
import { publicImage } from "./attach-image.ts";
import type { CatalogueDeps } from "./deps.ts";

/**
 * Every read first waits for the projection to apply everything appended so far, by any
 * replica: a GET right after a write sees it. The reads below only read what they find, so they
 * take the read model's documents read-only, without a copy.
 */
async function cheeses(deps: CatalogueDeps) {
  await deps.projection.catchUp();
  return deps.readModels.collection<CheeseDocument>(CHEESES);
}

/** GET /cheeses/{id}: the cheese as its kept, checked text (`CheckedCheeses`), and its revision. */
export async function getCheese(deps: CatalogueDeps, cheeseId: number): Promise<ServedResult<CheeseReply>> {
  const document = await (await cheeses(deps)).findOneReadOnly({ _id: cheeseId });
  if (!document) throw notFound(`cheese ${cheeseId} not found`);
  return {
    cheese: new CheckedText(deps.checkedCheeses.textOf(document)),
    revision: document._revision as number,
  };
}

/**
 * GET /cheeses: one page after the cursor's position, with the total of all matches; the
 * cheeses as their kept, checked texts (`CheckedCheeses`).
 */
export async function listCheeses(
  deps: CatalogueDeps,
  request: {
    cursor?: string | undefined;
    limit: number;
    sort?: CheeseSort | undefined;
    filters: CheeseFilters;
  },
): Promise<ServedResult<CheeseList>> {
  const { sort, filters, after } = resolveListRequest(request);
  const collection = await cheeses(deps);
  const matching = filterQuery(filters);
  const { field, direction } = sortSpec(sort);
  const [page, total] = await Promise.all([
    collection.findReadOnly(after ? { $and: [matching, afterQuery(after)] } : matching, {
      sort: { [field]: direction, _id: direction },
      limit: request.limit + 1,
    }),
    collection.count(matching),
  ]);
  const hasMore = page.length > request.limit;
  const items = page.slice(0, request.limit);
  const last = items[items.length - 1];
  return {
    items: new CheckedTexts(items.map((document) => deps.checkedCheeses.textOf(document))),
    nextCursor:
      hasMore && last ? encodeCursor({ sort, key: last[field] as string, id: last._id, filters }) : null,
    hasMore,
    total,
  };
}

/** findByStatus and findByTags: every match, ordered by id, as kept checked texts. */
export async function findCheeses(
  deps: CatalogueDeps,
  request: { status?: CheeseStatus[] | undefined; tags?: string[] | undefined },
): Promise<{ items: CheckedTexts }> {
  const filters = normaliseFilters({
    ...(request.status ? { status: request.status } : {}),
    ...(request.tags ? { tags: request.tags } : {}),
  });
  const documents = await (await cheeses(deps)).findReadOnly(filterQuery(filters), { sort: { _id: 1 } });
  return { items: new CheckedTexts(documents.map((document) => deps.checkedCheeses.textOf(document))) };
}

/** GET /store/inventory: cheeses per status, every status present. */
export async function inventory(deps: CatalogueDeps): Promise<Inventory> {
  const counts = await (await cheeses(deps)).countBy("status");
  return { available: counts.available ?? 0, pending: counts.pending ?? 0, sold: counts.sold ?? 0 };
}

export async function listImages(deps: CatalogueDeps, cheeseId: number): Promise<{ images: CheeseImage[] }> {
  const document = await (await cheeses(deps)).findOneReadOnly({ _id: cheeseId });
  if (!document) throw notFound(`cheese ${cheeseId} not found`);
  return { images: document.images.map(publicImage) };
}

/**
 * GET /cheeses/{id}?asOf=: the cheese as it was at `asOf`, its stream folded with the decider's own
 * `evolve` up to the last event recorded then. Read from the event store only: the read model and
 * the kept texts hold the cheese as it is now.
 */
export async function getCheeseAsOf(
  deps: Pick<CatalogueDeps, "store">,
  request: { cheeseId: number; asOf: string },
): Promise<CheeseReply & { at: string }> {
  const { state, last } = await foldStreamAsOf(
    deps.store,
    cheeseStream(request.cheeseId),
    cheeseDecider,
    Date.parse(request.asOf),
  );
  if (state.phase !== "present" || !last) {
    throw notFound(`cheese ${request.cheeseId} did not exist at ${request.asOf}`);
  }
  return { cheese: state.cheese, revision: state.revision, at: last.createdAt };
}
