import type { CollectionDefinition, Filter, IndexDefinition, QueryDefinition, Sort } from "./port.ts";
import { sortWithIdTieBreak } from "./sort.ts";

/**
 * Queries are declared with their collection (port.ts, QueryDefinition) so that each has an
 * index. This file holds the rules both ways: is a query that runs one of the declared ones
 * (the in-memory adapter checks under test), and does every declared query have an index and
 * every index a query (a unit test checks every service's declarations).
 */

/** The fields a filter tests, as dotted paths; those inside $and, $or and $nor included. */
export function filterFields(filter: Filter): Set<string> {
  const fields = new Set<string>();
  const walk = (node: Filter) => {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$and" || key === "$or" || key === "$nor") {
        for (const branch of value as Filter[]) walk(branch);
      } else {
        fields.add(key);
      }
    }
  };
  walk(filter);
  return fields;
}

export interface QueryShape {
  fields: Set<string>;
  sort?: Sort | undefined;
  groupBy?: string | undefined;
}

const sameKeys = (a: [string, number][], b: [string, number][]) =>
  a.length === b.length && a.every(([key, direction], i) => b[i]![0] === key && b[i]![1] === direction);

const reversed = (sort: [string, number][]): [string, number][] =>
  sort.map(([key, direction]) => [key, -direction]);

/** Sorts as the adapters run them (ties broken on _id), equal when one is the other reversed too. */
function sameSort(a: Sort | undefined, b: Sort | undefined): boolean {
  if ((a === undefined) !== (b === undefined)) return false;
  if (!a || !b) return true;
  const left = Object.entries(sortWithIdTieBreak(a));
  const right = Object.entries(sortWithIdTieBreak(b));
  return sameKeys(left, right) || sameKeys(left, reversed(right));
}

function requiredFields(query: QueryDefinition): string[] {
  const optional = new Set(query.optional ?? []);
  return [...filterFields(query.filter)].filter((field) => !optional.has(field));
}

/** Whether a query that runs is the declared `query`. */
export function isDeclared(query: QueryDefinition, shape: QueryShape): boolean {
  if (query.groupBy !== shape.groupBy || !sameSort(query.sort, shape.sort)) return false;
  const declared = filterFields(query.filter);
  return (
    [...shape.fields].every((field) => declared.has(field)) &&
    requiredFields(query).every((field) => shape.fields.has(field))
  );
}

/** Lookups by primary key need no declaration: the _id index serves them. */
export const byIdOnly = (shape: QueryShape) =>
  shape.groupBy === undefined &&
  shape.sort === undefined &&
  shape.fields.size > 0 &&
  [...shape.fields].every((field) => field === "_id");

export function describeShape(collection: string, shape: QueryShape): string {
  const parts = [`on ${collection} filtering [${[...shape.fields].join(", ")}]`];
  if (shape.sort) parts.push(`sorted ${JSON.stringify(shape.sort)}`);
  if (shape.groupBy) parts.push(`counted by ${shape.groupBy}`);
  return parts.join(" ");
}

export class UndeclaredQueryError extends Error {
  override readonly name = "UndeclaredQueryError";
  constructor(collection: string, shape: QueryShape) {
    super(
      `the query ${describeShape(collection, shape)} is not declared: add it to the collection's ` +
        "queries, with an index that serves it (docs/architecture.md, Read models)",
    );
  }
}

/**
 * Whether `index` serves `query` the way MongoDB would use it: for a sorted query, keys that the
 * query always tests for equality (in any order) and then the sort itself, so the index gives the
 * order and no in-memory sort is needed; for a count per value, the grouped field first; for
 * any other, a field the query always tests first.
 */
export function serves(index: IndexDefinition, query: QueryDefinition): boolean {
  const keys = Object.entries(index.keys);
  const required = new Set(requiredFields(query));
  if (query.sort) {
    const sort = Object.entries(sortWithIdTieBreak(query.sort));
    for (let start = 0; start + sort.length <= keys.length; start++) {
      const prefixOk = keys.slice(0, start).every(([key]) => required.has(key));
      if (!prefixOk) return false;
      const window = keys.slice(start, start + sort.length);
      if (sameKeys(window, sort) || sameKeys(window, reversed(sort))) return true;
    }
    return false;
  }
  if (query.groupBy) return keys[0]?.[0] === query.groupBy;
  return keys.length > 0 && required.has(keys[0]![0]);
}

/** What is wrong between a collection's declared queries and its declared indexes. */
export function declarationProblems(definition: CollectionDefinition): string[] {
  const problems: string[] = [];
  const idIndex: IndexDefinition = { keys: { _id: 1 } };
  for (const query of definition.queries) {
    const indexes = [idIndex, ...definition.indexes];
    if (indexes.some((index) => serves(index, query))) continue;
    if (query.scans && !query.sort) continue;
    problems.push(`${definition.name}: no index serves the query "${query.name}"`);
  }
  for (const index of definition.indexes) {
    if (!definition.queries.some((query) => serves(index, query)))
      problems.push(`${definition.name}: no declared query uses the index ${JSON.stringify(index.keys)}`);
  }
  return problems;
}

/** The physical name of a collection at a projection version, and of its checkpoint. */
export const versionedName = (name: string, version: number) => `${name}_v${version}`;

/** The physical name of a collection at a projection version's generation, and of its checkpoint. */
export const generationName = (name: string, version: number, generation: number) =>
  generation === 0 ? versionedName(name, version) : `${versionedName(name, version)}_g${generation}`;

/**
 * Versions of `name` (any generation) that `defineProjection` at `version` drops: all before the
 * previous one.
 */
export function droppedVersion(physical: string, name: string, version: number): boolean {
  const match = /^(.*)_v(\d+)(?:_g\d+)?$/.exec(physical);
  return match !== null && match[1] === name && Number(match[2]) < version - 1;
}
