import { compare } from "mingo/util";
import type { Document, Filter, IndexDefinition, Sort } from "./port.ts";
import { ordered } from "./predicate.ts";

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
interface Entry {
  document: Document;
}

/** Documents per block of an index: a write moves at most this many references, not the whole index. */
const BLOCK = 512;

export class SortedIndex {
  readonly keys: string[];
  /** 1 or -1 per key; the trailing `_id` is always ascending in the index. */
  readonly directions: (1 | -1)[];
  /**
   * The documents in index order, cut into blocks of at most BLOCK (none empty): an insert or a
   * removal splices one block, where one sorted array would move half the collection each time.
   */
  private blocks: Entry[][] = [];
  /** Each indexed document's entry, by _id: an update that moves nothing swaps the entry's document. */
  private entries = new Map<Document["_id"], Entry>();
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

  /**
   * The documents in index order, or backwards, from the first that can pass `filter`: when the
   * filter bounds the first key from the side the walk starts on (`$gt`, `$gte` or equality
   * walking forwards through ascending values; `$lt`, `$lte` or equality backwards; also in every
   * branch of an `$or`, as a keyset cursor's), the walk starts at the bound (found by binary
   * search) instead of testing every document before it. Every document walked is still tested.
   */
  *walk(way: 1 | -1, filter: Filter = {}): Generator<Document> {
    const blocks = this.blocks;
    const from = this.start(way, filter);
    if (way === 1) {
      for (let [b, i] = from; b < blocks.length; b++, i = 0) {
        const block = blocks[b]!;
        for (; i < block.length; i++) yield block[i]!.document;
      }
    } else {
      for (let [b, i] = from; b >= 0; b--, i = (blocks[b]?.length ?? 0) - 1) {
        const block = blocks[b]!;
        for (; i >= 0; i--) yield block[i]!.document;
      }
    }
  }

  /**
   * The number of documents whose first key equals one of `values`, by binary search of each
   * value's range: no document is read.
   */
  countOf(values: unknown[]): number {
    let count = 0;
    for (const value of new Set(values)) {
      const [from, to] = this.range(value);
      count += this.distance(from, to);
    }
    return count;
  }

  /**
   * The number of documents per value of the first key (`String(value)`), found by jumping from
   * one value's range to the next: as many binary searches as there are values.
   */
  countPerValue(): Record<string, number> {
    const counts: Record<string, number> = {};
    const key = this.keys[0]!;
    let from: [number, number] = [0, 0];
    while (from[0] < this.blocks.length) {
      const value = this.blocks[from[0]]![from[1]]!.document[key];
      const to = this.range(value)[1];
      counts[String(value)] = (counts[String(value)] ?? 0) + this.distance(from, to);
      from = to;
    }
    return counts;
  }

  /**
   * The first key's values that `filter` requires it to equal (equality, or `$in` of plain
   * values), or undefined when it does not test the first key that way.
   */
  firstKeyValues(filter: Filter): unknown[] | undefined {
    if (!this.usable) return undefined;
    const key = this.keys[0]!;
    if (key === "_id" || !(key in filter)) return undefined;
    const condition = filter[key];
    const values = isOperator(condition)
      ? Object.keys(condition as object).length === 1 && Array.isArray((condition as { $in?: unknown }).$in)
        ? ((condition as { $in: unknown[] }).$in as unknown[])
        : undefined
      : [condition];
    return values?.every(isPlain) ? values : undefined;
  }

  /**
   * When `filter` tests the first key by equality or `$in` of plain values: the documents that
   * pass that test (in index order per value) and the filter without it. Otherwise undefined.
   */
  narrow(filter: Filter): { candidates: Document[]; rest: Filter } | undefined {
    const values = this.firstKeyValues(filter);
    if (!values) return undefined;
    const candidates: Document[] = [];
    for (const value of new Set(values)) {
      const [from, to] = this.range(value);
      const blocks = this.blocks;
      for (let [b, i] = from; b < to[0] || (b === to[0] && i < to[1]); ) {
        const block = blocks[b]!;
        candidates.push(block[i]!.document);
        if (++i === block.length) [b, i] = [b + 1, 0];
      }
    }
    const { [this.keys[0]!]: _tested, ...rest } = filter;
    return { candidates, rest };
  }

  /** Replaces the indexed documents by these (live ones): one sort instead of an insert each. */
  rebuild(documents: Document[]): void {
    this.usable = documents.every((document) => this.keys.every((key) => isPlain(document[key])));
    this.blocks = [];
    this.entries = new Map();
    if (!this.usable) return;
    const sorted = [...documents].sort((a, b) => this.order(a, b)).map((document) => ({ document }));
    for (const entry of sorted) this.entries.set(entry.document._id, entry);
    for (let from = 0; from < sorted.length; from += BLOCK / 2)
      this.blocks.push(sorted.slice(from, from + BLOCK / 2));
  }

  add(document: Document): void {
    if (!this.usable) return;
    if (!this.keys.every((key) => isPlain(document[key]))) {
      this.usable = false;
      this.blocks = [];
      this.entries = new Map();
      return;
    }
    const entry = { document };
    this.entries.set(document._id, entry);
    const blocks = this.blocks;
    if (blocks.length === 0) {
      blocks.push([entry]);
      return;
    }
    // After the last document (a creation's increasing time and id): at the end, no search.
    const lastBlock = blocks[blocks.length - 1]!;
    let [b, i] =
      this.order(lastBlock[lastBlock.length - 1]!.document, document) < 0
        ? [blocks.length - 1, lastBlock.length]
        : this.place(document);
    if (b === blocks.length) {
      b -= 1;
      i = blocks[b]!.length;
    }
    const block = blocks[b]!;
    block.splice(i, 0, entry);
    if (block.length > BLOCK) blocks.splice(b + 1, 0, block.splice(BLOCK / 2));
  }

  remove(document: Document): void {
    if (!this.usable) return;
    const entry = this.entries.get(document._id);
    if (!entry) return;
    this.entries.delete(document._id);
    const [b, i] = this.place(entry.document);
    if (this.blocks[b]?.[i] === entry) this.removeAt(b, i);
    else {
      // Not where its keys say: it was changed in place. Cannot happen (documents are replaced,
      // never mutated, in the store), but a wrong index would answer wrongly, so look it up.
      for (const [at, block] of this.blocks.entries()) {
        const found = block.indexOf(entry);
        if (found !== -1) {
          this.removeAt(at, found);
          return;
        }
      }
    }
  }

  /** Whether `after` sits where `before` did (no key changed), so the index needs no move. */
  samePlace(before: Document, after: Document): boolean {
    return this.keys.every((key) => before[key] === after[key]);
  }

  /** Replaces `before` (same keys) by `after` in place. */
  replace(before: Document, after: Document): void {
    if (!this.usable) return;
    const entry = this.entries.get(before._id);
    if (entry?.document === before && after._id === before._id) entry.document = after;
    else {
      this.remove(before);
      this.add(after);
    }
  }

  /** Where the documents whose first key equals `value` begin and end (exclusive). */
  private range(value: unknown): [[number, number], [number, number]] {
    const key = this.keys[0]!;
    const direction = this.directions[0]!;
    return [
      this.seek((document) => compareValues(document[key], value) * direction < 0),
      this.seek((document) => compareValues(document[key], value) * direction <= 0),
    ];
  }

  /** The number of documents from `from` up to `to` (exclusive): block lengths, no document read. */
  private distance(from: [number, number], to: [number, number]): number {
    if (from[0] === to[0]) return to[1] - from[1];
    let count = this.blocks[from[0]]!.length - from[1];
    for (let b = from[0] + 1; b < to[0]; b++) count += this.blocks[b]!.length;
    return count + to[1];
  }

  /**
   * Where a walk `way` through the index may start for `filter`: past the documents before the
   * first key's bound (see walk). Forwards [block, offset] of the first document to walk;
   * backwards that of the last, or [-1, -1] when none.
   */
  private start(way: 1 | -1, filter: Filter): [number, number] {
    const blocks = this.blocks;
    const bound = this.usable ? boundOf(filter, this.keys[0]!, way * this.directions[0]!) : undefined;
    if (!bound) return way === 1 ? [0, 0] : [blocks.length - 1, (blocks.at(-1)?.length ?? 0) - 1];
    const key = this.keys[0]!;
    const direction = this.directions[0]!;
    // In index order: forwards, skip what sorts before the bound (and at it, when strict);
    // backwards, what sorts after it (and at it, when strict).
    const skipBefore = way === 1 ? !bound.inclusive : bound.inclusive;
    const at = this.seek((document) => {
      const c = compareValues(document[key], bound.value) * direction;
      return skipBefore ? c <= 0 : c < 0;
    });
    if (way === 1) return at;
    // The place before `at`.
    if (at[1] > 0) return [at[0], at[1] - 1];
    return at[0] > 0 ? [at[0] - 1, blocks[at[0] - 1]!.length - 1] : [-1, -1];
  }

  private removeAt(b: number, i: number): void {
    const block = this.blocks[b]!;
    block.splice(i, 1);
    if (block.length === 0) this.blocks.splice(b, 1);
  }

  private order(a: Document, b: Document): number {
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i]!;
      const c = compareValues(a[key], b[key]);
      if (c !== 0) return c * this.directions[i]!;
    }
    return 0;
  }

  /** Where `document` is, or would go: the first place whose document is not before it. */
  private place(document: Document): [number, number] {
    return this.seek((other) => this.order(other, document) < 0);
  }

  /**
   * The first place (block, offset) whose document is not `before`, for a `before` true of a
   * first stretch of the index and false of the rest; [blocks, 0] past the end.
   */
  private seek(before: (document: Document) => boolean): [number, number] {
    const test = (entry: Entry) => before(entry.document);
    const blocks = this.blocks;
    let low = 0;
    let high = blocks.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const block = blocks[middle]!;
      if (test(block[block.length - 1]!)) low = middle + 1;
      else high = middle;
    }
    if (low === blocks.length) return [low, 0];
    const block = blocks[low]!;
    let from = 0;
    let to = block.length;
    while (from < to) {
      const middle = (from + to) >>> 1;
      if (test(block[middle]!)) from = middle + 1;
      else to = middle;
    }
    return [low, from];
  }
}

/**
 * The bound `filter` puts on `key` from the side a walk begins when it meets the key's values in
 * `order` (1 ascending, -1 descending): every document before the bound in that order fails the
 * filter. From `$gt`/`$gte` (ascending) or `$lt`/`$lte` (descending) of a string or a number
 * (documents of another type fail them too: comparisons keep to one type, as in MongoDB), or
 * equality, at the top level, in `$and`, or in every branch of an `$or` (the loosest of them).
 */
function boundOf(filter: Filter, key: string, order: number): Bound | undefined {
  let tightest: Bound | undefined;
  const consider = (bound: Bound | undefined) => {
    if (bound) tightest = tightest ? tighter(bound, tightest, order) : bound;
  };
  for (const [field, condition] of Object.entries(filter)) {
    if (field === key) consider(boundOfCondition(condition, order));
    else if (field === "$and" && Array.isArray(condition))
      for (const branch of condition as Filter[]) consider(boundOf(branch, key, order));
    else if (field === "$or" && Array.isArray(condition))
      consider(loosest(condition as Filter[], key, order));
  }
  return tightest;
}

interface Bound {
  value: string | number;
  inclusive: boolean;
}

/**
 * Of two bounds on one key, the one a walk in `order` starts later from: the further value, or
 * on the same value the one that excludes it.
 */
function tighter(a: Bound, b: Bound, order: number): Bound {
  const c = compareValues(a.value, b.value) * order;
  return c > 0 || (c === 0 && !a.inclusive) ? a : b;
}

function loosest(branches: Filter[], key: string, order: number): Bound | undefined {
  let loose: Bound | undefined;
  for (const branch of branches) {
    const bound = boundOf(branch, key, order);
    if (!bound) return undefined;
    // The looser of the two: the one `tighter` does not pick.
    loose = loose && tighter(bound, loose, order) === bound ? loose : bound;
  }
  return loose;
}

function boundOfCondition(condition: unknown, order: number): Bound | undefined {
  // NaN orders against nothing: no bound (the walk starts at the end, the filter decides).
  if (!isOperator(condition)) return ordered(condition) ? { value: condition, inclusive: true } : undefined;
  let tightest: Bound | undefined;
  const [strict, inclusive] = order === 1 ? ["$gt", "$gte"] : ["$lt", "$lte"];
  for (const [operator, value] of Object.entries(condition as object)) {
    if ((operator !== strict && operator !== inclusive) || !ordered(value)) continue;
    const bound = { value, inclusive: operator === inclusive };
    tightest = tightest ? tighter(bound, tightest, order) : bound;
  }
  return tightest;
}

/** Values in MongoDB's (mingo's) order; two strings, numbers or booleans compared directly. */
function compareValues(a: unknown, b: unknown): number {
  const type = typeof a;
  if (type === typeof b && (type === "string" || type === "number" || type === "boolean"))
    return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0;
  return compare(a, b);
}

const isPlain = (value: unknown): boolean =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean";

const isOperator = (value: unknown): boolean =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  !(value instanceof RegExp) &&
  Object.keys(value).some((key) => key.startsWith("$"));
