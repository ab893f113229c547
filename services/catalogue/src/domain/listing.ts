import { type CheeseFilters, type CheeseSort, CheeseStatus, cheeseSorts } from "@cheese/contracts";
import {
  badRequest,
  decodeCursor as decodePosition,
  encodeCursor as encodePosition,
} from "@cheese/service-kit";
import { z } from "zod";
import { normaliseName } from "./cheese.ts";

/**
 * Keyset pagination of GET /cheeses. A page is "the next `limit` cheeses after (key, id) in this
 * order", so adding or removing other cheeses never shifts what comes next: no cheese present
 * throughout is skipped or repeated. The cursor is opaque to clients: base64url of the position,
 * the sort and the filters it was issued for.
 */

export interface ListPosition {
  sort: CheeseSort;
  /** The sort field's value of the last cheese returned (lower-cased name, or createdAt). */
  key: string;
  id: number;
  filters: CheeseFilters;
}

const CursorSchema = z.strictObject({
  v: z.literal(1),
  s: z.enum(cheeseSorts),
  k: z.string(),
  i: z.number().int().positive(),
  f: z.strictObject({
    status: z.array(CheeseStatus).optional(),
    tags: z.array(z.string()).optional(),
    category: z.string().optional(),
    organic: z.boolean().optional(),
  }),
});

export function encodeCursor(position: ListPosition): string {
  return encodePosition({ v: 1, s: position.sort, k: position.key, i: position.id, f: position.filters });
}

export function decodeCursor(cursor: string): ListPosition {
  const { s, k, i, f } = decodePosition(cursor, CursorSchema);
  return { sort: s, key: k, id: i, filters: normaliseFilters(f) };
}

/** Lower-case names, sorted and de-duplicated lists: equal filters compare equal. */
export function normaliseFilters(filters: CheeseFilters): CheeseFilters {
  const unique = (values: string[]) => [...new Set(values)].sort();
  return {
    ...(filters.status?.length ? { status: unique(filters.status) as CheeseFilters["status"] } : {}),
    ...(filters.tags?.length ? { tags: unique(filters.tags.map(normaliseName)) } : {}),
    ...(filters.category !== undefined ? { category: normaliseName(filters.category) } : {}),
    ...(filters.organic !== undefined ? { organic: filters.organic } : {}),
  };
}

/**
 * The sort and filters of a request that continues from a cursor: what the request leaves out is
 * taken from the cursor; what it states must agree with it (400 otherwise: start again).
 */
export function resolveListRequest(request: {
  sort?: CheeseSort | undefined;
  filters: CheeseFilters;
  cursor?: string | undefined;
}): { sort: CheeseSort; filters: CheeseFilters; after?: ListPosition } {
  const stated = normaliseFilters(request.filters);
  if (!request.cursor) return { sort: request.sort ?? "name", filters: stated };
  const after = decodeCursor(request.cursor);
  if (request.sort !== undefined && request.sort !== after.sort) {
    throw badRequest(`the cursor belongs to sort=${after.sort}; start again without it`);
  }
  const filters: CheeseFilters = { ...after.filters };
  for (const name of ["status", "tags", "category", "organic"] as const) {
    const value = stated[name];
    if (value === undefined) continue;
    if (JSON.stringify(value) !== JSON.stringify(after.filters[name])) {
      throw badRequest(`the cursor was issued for other ${name} filters; start again without it`);
    }
  }
  return { sort: after.sort, filters, after };
}

/** Read-model field each sort orders by; ties break on `_id` in the same direction. */
export function sortSpec(sort: CheeseSort): { field: "sortName" | "createdAt"; direction: 1 | -1 } {
  return {
    field: sort.endsWith("name") ? "sortName" : "createdAt",
    direction: sort.startsWith("-") ? -1 : 1,
  };
}

/** A MongoDB filter for the filters of the list. */
export function filterQuery(filters: CheeseFilters): Record<string, unknown> {
  return {
    ...(filters.status ? { status: { $in: filters.status } } : {}),
    ...(filters.tags ? { tagNames: { $in: filters.tags } } : {}),
    ...(filters.category !== undefined ? { categoryName: filters.category } : {}),
    ...(filters.organic !== undefined ? { organic: filters.organic } : {}),
  };
}

/** Everything strictly after `position` in the order of its sort. */
export function afterQuery(position: ListPosition): Record<string, unknown> {
  const { field, direction } = sortSpec(position.sort);
  const beyond = direction === 1 ? "$gt" : "$lt";
  return {
    $or: [{ [field]: { [beyond]: position.key } }, { [field]: position.key, _id: { [beyond]: position.id } }],
  };
}
