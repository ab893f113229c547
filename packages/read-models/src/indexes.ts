import { compare } from "mingo/util";
import type { Document, Filter, IndexDefinition, Sort } from "./port.ts";

/**
 * A declared index of the in-memory read models: the live documents kept sorted by the index's
 * keys (then `_id`), as a MongoDB B-tree index would keep them. It serves
 * - a find sorted by exactly its keys (or their reverse): walked in order, stopping at the page's
 *   end, instead of a scan and a sort of every match;
 * - a filter on its first key by equality or `$in`: the matching range found by binary search, so
 *   only those documents are tested (and counted without a test when nothing else is filtered).
 *
 * Values compare as mingo (and MongoDB) sort them. An index whose keys ever hold something other
 * than a string, a number, a boolean or null (a missing field, an array, an object) gives up
 * (`usable` false) and the collection scans as before: a multikey index is not worth its
 * complexity here.
 */
export class SortedIndex {
  readonly keys: string[];
  /** 1 or -1 per key; the trailing `_id` is always ascending in the index. */
  readonly directions: (1 | -1)[];
  private documents: Document[] = [];
  usable = true;

  constructor(definition: IndexDefinition) {
    const keys = Object.entries(definition.keys);
    if (!keys.some(([key]) => key === "_id")) keys.push(["_id", 1]);
    this.keys = keys.map(([key]) => key);
    this.directions = keys.map(([, direction]) => direction);
  }

  /** Whether the index orders documents as `sort` does, forwards (1), backwards (-1) or not (0). */
  serves(sort: Sort): 1 | -1 | 0 {
    const entries = Object.entries(sort);
    if (!this.usable || entries.length !== this.keys.length) return 0;
    let way: 1 | -1 | 0 = 0;
    for (const [i, [key, direction]] of entries.entries()) {
      if (key !== this.keys[i]) return 0;
      const here = direction === this.directions[i] ? 1 : -1;
      if (way !== 0 && here !== way) return 0;
      way = here;
    }
    return way;
  }

  /** The documents in index order, or backwards. */
  *walk(way: 1 | -1): Generator<Document> {
    const docs = this.documents;
    if (way === 1) for (let i = 0; i < docs.length; i++) yield docs[i]!;
    else for (let i = docs.length - 1; i >= 0; i--) yield docs[i]!;
  }

  /**
   * When `filter` tests the first key by equality or `$in` of plain values: the documents that
   * pass that test (in index order per value) and the filter without it. Otherwise undefined.
   */
  narrow(filter: Filter): { candidates: Document[]; rest: Filter } | undefined {
    if (!this.usable) return undefined;
    const key = this.keys[0]!;
    if (key === "_id" || !(key in filter)) return undefined;
    const condition = filter[key];
    const values = isOperator(condition)
      ? Object.keys(condition as object).length === 1 && Array.isArray((condition as { $in?: unknown }).$in)
        ? ((condition as { $in: unknown[] }).$in as unknown[])
        : undefined
      : [condition];
    if (!values?.every(isPlain)) return undefined;
    const candidates: Document[] = [];
    for (const value of new Set(values)) {
      const from = this.bound(value, false);
      const to = this.bound(value, true);
      for (let i = from; i < to; i++) candidates.push(this.documents[i]!);
    }
    const { [key]: _tested, ...rest } = filter;
    return { candidates, rest };
  }

  add(document: Document): void {
    if (!this.usable) return;
    if (!this.keys.every((key) => isPlain(document[key]))) {
      this.usable = false;
      this.documents = [];
      return;
    }
    this.documents.splice(this.position(document), 0, document);
  }

  remove(document: Document): void {
    if (!this.usable) return;
    const at = this.position(document);
    if (this.documents[at] === document) this.documents.splice(at, 1);
    else {
      // Not where its keys say: it was changed in place. Cannot happen (documents are replaced,
      // never mutated, in the store), but a wrong index would answer wrongly, so look it up.
      const found = this.documents.indexOf(document);
      if (found !== -1) this.documents.splice(found, 1);
    }
  }

  /** Whether `after` sits where `before` did (no key changed), so the index needs no move. */
  samePlace(before: Document, after: Document): boolean {
    return this.keys.every((key) => before[key] === after[key]);
  }

  /** Replaces `before` (same keys) by `after` in place. */
  replace(before: Document, after: Document): void {
    if (!this.usable) return;
    const at = this.position(before);
    if (this.documents[at] === before) this.documents[at] = after;
    else {
      this.remove(before);
      this.add(after);
    }
  }

  private order(a: Document, b: Document): number {
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i]!;
      const c = compare(a[key], b[key]);
      if (c !== 0) return c * this.directions[i]!;
    }
    return 0;
  }

  /** First position whose document is not before `document`. */
  private position(document: Document): number {
    let low = 0;
    let high = this.documents.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.order(this.documents[middle]!, document) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** First position whose first key is past `value` (`after`), or not before it. */
  private bound(value: unknown, after: boolean): number {
    const key = this.keys[0]!;
    const direction = this.directions[0]!;
    let low = 0;
    let high = this.documents.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const c = compare(this.documents[middle]![key], value) * direction;
      if (c < 0 || (after && c === 0)) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

const isPlain = (value: unknown): boolean =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean";

const isOperator = (value: unknown): boolean =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  !(value instanceof RegExp) &&
  Object.keys(value).some((key) => key.startsWith("$"));
