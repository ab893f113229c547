import type { Sort } from "./port.ts";

/**
 * MongoDB returns ties (and unsorted results) in no particular order; both adapters end every
 * find's sort on `_id` so results, and pages cut with skip/limit, are the same on each call.
 */
export function sortWithIdTieBreak(sort: Sort | undefined): Sort {
  return sort && "_id" in sort ? sort : { ...sort, _id: 1 };
}
