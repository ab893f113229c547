import { aggregate, update as applyUpdate, find as mingoFind } from "mingo";
import {
  byIdOnly,
  droppedVersion,
  filterFields,
  generationName,
  isDeclared,
  type QueryShape,
  UndeclaredQueryError,
  versionedName,
} from "./declarations.ts";
import { SortedIndex } from "./indexes.ts";
import type {
  Collection,
  CollectionDefinition,
  Document,
  Filter,
  FindOptions,
  Generation,
  ProjectionDefinition,
  ReadModelSnapshots,
  ReadModelStore,
  Update,
} from "./port.ts";
import { predicate } from "./predicate.ts";
import { readSnapshot, tidySnapshots, writeSnapshot } from "./snapshot.ts";
import { sortWithIdTieBreak } from "./sort.ts";

export interface MemoryReadModelsOptions {
  /**
   * Refuse (throw) a query on a defined collection that its definition does not declare, so the
   * declarations, and the indexes made from them, stay true to the code. Default: under test
   * (NODE_ENV=test, as vitest sets it).
   */
  checkQueries?: boolean;
  /**
   * Deep-freeze every stored document, so that a caller changing what a read-only find handed out
   * (through a cast, or from JavaScript) throws instead of silently changing the store. Default:
   * under test (NODE_ENV=test), like `checkQueries`; off in production, where it would cost every
   * write.
   */
  freezeDocuments?: boolean;
  /**
   * Where projections' snapshots are written and read (`snapshots`); without it there are none
   * and every start rebuilds from the events.
   */
  snapshotDir?: string;
}

/** A collection of this adapter, with what its snapshots need. */
interface MemoryCollection extends Collection {
  /** The stored documents, tombstones included, as they are now (never changed in place). */
  stored(): Document[];
  /** Replaces every document, and rebuilds the indexes. */
  replaceAll(documents: Document[]): void;
  /** Builds the indexes now if writes into the empty collection left them to be built (`caughtUp`). */
  buildIndexes(): void;
}

/**
 * Read models held in memory and queried by mingo, so filters, sorts and update operators behave
 * as MongoDB's do. Not durable: a start loads a projection's snapshot (`snapshots`, when given a
 * `snapshotDir`) and applies the events after it, or rebuilds from the first event. A defined
 * collection keeps its declared indexes (indexes.ts), so a sorted page or a filtered count costs
 * what it would in MongoDB with those indexes, not a scan and a sort of the whole collection.
 */
export function createMemoryReadModels(options: MemoryReadModelsOptions = {}): ReadModelStore {
  const checkQueries = options.checkQueries ?? process.env.NODE_ENV === "test";
  const freeze = options.freezeDocuments ?? process.env.NODE_ENV === "test";
  /** Physical name (a collection at a version and generation) -> its documents. */
  const collections = new Map<string, MemoryCollection>();
  const checkpoints = new Map<string, number>();
  /** Logical name -> its definition, and the physical name reads reach (the served generation). */
  const defined = new Map<string, { served: string; definition: CollectionDefinition }>();
  /** `<projection>_v<version>` -> that version's live generation (the last served); null while its first build is under way. */
  const liveGenerations = new Map<string, number | null>();
  /** The collection under `physical`, made with the indexes and query checks of `name`'s definition. */
  const physicalCollection = (name: string, physical: string): MemoryCollection => {
    let collection = collections.get(physical);
    if (!collection) {
      const definition = defined.get(name)?.definition;
      const check =
        checkQueries && definition
          ? (shape: QueryShape) => {
              if (byIdOnly(shape) || definition.queries.some((query) => isDeclared(query, shape))) return;
              throw new UndeclaredQueryError(name, shape);
            }
          : undefined;
      collection = memoryCollection(definition?.indexes ?? [], { check, freeze });
      collections.set(physical, collection);
    }
    return collection;
  };
  const generationOf = (
    projection: ProjectionDefinition,
    version: number,
    generation: number,
  ): Generation => ({
    version,
    generation,
    key: generationName(projection.name, version, generation),
    collection: <T extends Document = Document>(name: string) =>
      physicalCollection(name, generationName(name, version, generation)) as unknown as Collection<T>,
  });
  const liveOf = (projection: ProjectionDefinition, version: number): number | undefined => {
    const recorded = liveGenerations.get(versionedName(projection.name, version));
    if (recorded !== undefined) return recorded ?? undefined;
    return checkpoints.has(versionedName(projection.name, version)) ? 0 : undefined;
  };
  const { snapshotDir } = options;
  const snapshots: ReadModelSnapshots | undefined = snapshotDir
    ? {
        async restore(projection, { notAfter }) {
          const key = versionedName(projection.name, projection.version);
          tidySnapshots(snapshotDir, projection.name, projection.version);
          const read = await readSnapshot(snapshotDir, key);
          if ("ignored" in read) return read;
          const { collections: saved, position } = read.content;
          if (position > notAfter)
            return { ignored: `its position ${position} is past the store's head ${notAfter}` };
          const names = projection.collections.map((definition) => definition.name);
          const missing = names.find((name) => !saved.has(name));
          if (missing !== undefined) return { ignored: `no collection ${missing}` };
          for (const name of names)
            physicalCollection(name, generationName(name, projection.version, 0)).replaceAll(
              saved.get(name)!,
            );
          checkpoints.set(key, position);
          liveGenerations.set(key, 0);
          return { position };
        },
        async save(projection, generation, position) {
          // Captured now: the documents are replaced on every write, never changed in place.
          const captured = projection.collections.map(({ name }) => ({
            name,
            documents: physicalCollection(
              name,
              generationName(name, generation.version, generation.generation),
            ).stored(),
          }));
          await writeSnapshot(
            snapshotDir,
            versionedName(projection.name, generation.version),
            position,
            captured,
          );
        },
      }
    : undefined;
  const dropGeneration = (projection: ProjectionDefinition, generation: Generation) => {
    for (const { name } of projection.collections)
      collections.delete(generationName(name, generation.version, generation.generation));
    checkpoints.delete(generation.key);
  };
  return {
    durable: false,
    snapshots,
    collection<T extends Document = Document>(name: string): Collection<T> {
      return physicalCollection(name, defined.get(name)?.served ?? name) as unknown as Collection<T>;
    },
    async defineProjection(projection) {
      const { name, version, collections: definitions } = projection;
      const generation = liveGenerations.get(versionedName(name, version)) ?? 0;
      for (const definition of definitions) {
        defined.set(definition.name, {
          served: generationName(definition.name, version, generation),
          definition,
        });
        for (const physical of [...collections.keys()]) {
          if (droppedVersion(physical, definition.name, version)) collections.delete(physical);
        }
      }
      for (const map of [checkpoints, liveGenerations]) {
        for (const key of [...map.keys()]) if (droppedVersion(key, name, version)) map.delete(key);
      }
      return generationName(name, version, generation);
    },
    async liveGeneration(projection, version) {
      const generation = liveOf(projection, version);
      return generation === undefined ? undefined : generationOf(projection, version, generation);
    },
    async newGeneration(projection, { fresh = false } = {}) {
      const live = liveOf(projection, projection.version);
      if (live === undefined) liveGenerations.set(versionedName(projection.name, projection.version), null);
      const generation = generationOf(projection, projection.version, live === undefined ? 0 : live + 1);
      if (fresh) dropGeneration(projection, generation);
      return generation;
    },
    async serve(projection, generation) {
      for (const { name } of projection.collections) {
        const definition = defined.get(name)?.definition ?? { name, indexes: [], queries: [] };
        defined.set(name, {
          served: generationName(name, generation.version, generation.generation),
          definition,
        });
      }
      liveGenerations.set(versionedName(projection.name, generation.version), generation.generation);
    },
    async dropGeneration(projection, generation) {
      dropGeneration(projection, generation);
    },
    async caughtUp(projection, generation) {
      for (const { name } of projection.collections)
        collections.get(generationName(name, generation.version, generation.generation))?.buildIndexes();
    },
    async getCheckpoint(projection) {
      return checkpoints.get(projection);
    },
    async setCheckpoint(projection, position) {
      // Only forward: a replica (or a save) behind another one must not move it back.
      if (position > (checkpoints.get(projection) ?? Number.NEGATIVE_INFINITY))
        checkpoints.set(projection, position);
    },
    async ping() {
      return true;
    },
    async close() {},
  };
}

function memoryCollection(
  definitions: CollectionDefinition["indexes"],
  { check, freeze }: { check?: ((shape: QueryShape) => void) | undefined; freeze: boolean },
): MemoryCollection {
  const documents = new Map<Document["_id"], Document>();
  const indexes = definitions.map((definition) => new SortedIndex(definition));
  const checked = (filter: Filter, sort?: FindOptions["sort"], groupBy?: string) =>
    check?.({ fields: filterFields(filter), sort, groupBy });
  const live = (document: Document | undefined): document is Document =>
    document !== undefined && !document._deleted;
  /** The number of live documents (tombstones left out), kept on every write. */
  let liveCount = 0;
  /**
   * Writes into an empty collection (a projection built from its first event) leave the indexes
   * to be built once, by one sort each, when the projection has caught up (`caughtUp`) or at the
   * first read that needs them, whichever comes first: an insert each cost a binary search and a
   * splice per index, and every later update of the same document a move.
   */
  let indexesDeferred = false;
  const indexed = () => {
    if (!indexesDeferred) return;
    indexesDeferred = false;
    const alive: Document[] = [];
    for (const document of documents.values()) if (live(document)) alive.push(document);
    for (const index of indexes) index.rebuild(alive);
  };
  /** Stores `next` (or removes the document) and moves it in every index. */
  const store = (id: Document["_id"], next: Document | undefined) => {
    if (next && freeze) deepFreeze(next);
    if (documents.size === 0 && indexes.length > 0) indexesDeferred = true;
    const before = documents.get(id);
    if (next) documents.set(id, next);
    else documents.delete(id);
    const after = live(next) ? next : undefined;
    liveCount += (after ? 1 : 0) - (live(before) ? 1 : 0);
    if (indexesDeferred) return;
    for (const index of indexes) {
      if (live(before) && after && index.samePlace(before, after)) index.replace(before, after);
      else {
        if (live(before)) index.remove(before);
        if (after) index.add(after);
      }
    }
  };
  // Tombstones (see port.ts deleteOne) are stored but never read, nor indexed.
  const matching = (filter: Filter): Document[] => {
    indexed();
    for (const index of indexes) {
      const narrowed = index.narrow(filter);
      if (!narrowed) continue;
      if (Object.keys(narrowed.rest).length === 0) return narrowed.candidates;
      return narrowed.candidates.filter(predicate(narrowed.rest));
    }
    const test = predicate(filter);
    return [...documents.values()].filter((document) => !document._deleted && test(document));
  };
  // findOne and find hand out copies, so mutating a result is harmless; the read-only finds hand
  // out the stored documents themselves (`asStored`), which are replaced, never changed in place.
  const copy = (document: Document): Document => clone(document) as Document;
  const asStored = (document: Document): Document => document;
  const revisionAllows = (stored: Document, revision: number): boolean =>
    stored._revision === undefined || (stored._revision as number) < revision;
  const findOne = (filter: Filter, out: (document: Document) => Document): Document | null => {
    checked(filter);
    const keys = Object.keys(filter);
    if (keys.length === 1 && keys[0] === "_id" && isKey(filter._id)) {
      const document = documents.get(filter._id);
      return live(document) ? out(document) : null;
    }
    // Like MongoDB's findOne without a sort: which match comes back when several do is unspecified.
    const test = predicate(filter);
    for (const document of documents.values()) {
      if (!document._deleted && test(document)) return out(document);
    }
    return null;
  };
  const find = (
    filter: Filter,
    options: FindOptions = {},
    out: (document: Document) => Document,
  ): Document[] => {
    checked(filter, options.sort);
    const sort = sortWithIdTieBreak(options.sort);
    indexed();
    for (const index of indexes) {
      const way = index.serves(sort);
      if (way === 0) continue;
      // Walk the index in the sort's order from the filter's bound; stop once the page is full.
      const test = predicate(filter);
      const page: Document[] = [];
      let skip = options.skip ?? 0;
      for (const document of index.walk(way, filter)) {
        if (!test(document)) continue;
        if (skip > 0) skip--;
        else if (page.push(out(document)) === options.limit) break;
      }
      return page;
    }
    // Filter first so the sort only touches matches; only the returned page goes through `out`.
    let cursor = mingoFind(matching(filter), {}).sort(sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    // As in MongoDB, a limit of 0 means no limit.
    if (options.limit) cursor = cursor.limit(options.limit);
    return (cursor.all() as Document[]).map(out);
  };

  return {
    stored: () => [...documents.values()],
    replaceAll(replacement) {
      documents.clear();
      for (const document of replacement) {
        if (freeze) deepFreeze(document);
        documents.set(document._id, document);
      }
      const alive = replacement.filter(live);
      liveCount = alive.length;
      indexesDeferred = false;
      for (const index of indexes) index.rebuild(alive);
    },
    buildIndexes: indexed,
    findOne: async (filter) => findOne(filter, copy),
    find: async (filter, options) => find(filter, options, copy),
    findOneReadOnly: async (filter) => findOne(filter, asStored),
    findReadOnly: async (filter, options) => find(filter, options, asStored),
    async count(filter = {}) {
      checked(filter);
      const keys = Object.keys(filter);
      if (keys.length === 0) return liveCount;
      // A filter on one indexed field by equality or $in: counted from the index, nothing read.
      if (keys.length === 1) {
        indexed();
        for (const index of indexes) {
          const values = index.firstKeyValues(filter);
          if (values) return index.countOf(values);
        }
      }
      return matching(filter).length;
    },
    async countBy(field, filter = {}) {
      checked(filter, undefined, field);
      if (Object.keys(filter).length === 0) {
        indexed();
        const index = indexes.find((candidate) => candidate.usable && candidate.keys[0] === field);
        if (index) return index.countPerValue();
      }
      // The same $group as the MongoDB adapter, so missing fields count under "null" in both.
      const groups = aggregate(matching(filter), [{ $group: { _id: `$${field}`, count: { $sum: 1 } } }]);
      return Object.fromEntries(groups.map((group) => [String(group._id), group.count as number]));
    },
    async upsert(id, revision, update: Update) {
      const stored = documents.get(id);
      if (stored && !revisionAllows(stored, revision)) return false;
      const next = setOnly(update)
        ? setFields(live(stored) ? stored : { _id: id }, update)
        : mingoUpdate(live(stored) ? stored : { _id: id }, update);
      if (next._id !== id) throw new Error(`upsert may not change _id (${String(id)})`);
      next._revision = revision;
      store(id, next);
      return true;
    },
    async deleteOne(id, revision) {
      const stored = documents.get(id);
      if (revision === undefined) {
        if (!live(stored)) return false;
        store(id, undefined);
        return true;
      }
      if (stored && !revisionAllows(stored, revision)) return false;
      store(id, { _id: id, _revision: revision, _deleted: true });
      return live(stored);
    },
  };
}

const isKey = (value: unknown): value is Document["_id"] =>
  typeof value === "string" || typeof value === "number";

/** An update of top-level fields by $set and $unset only: applied without mingo, same result. */
function setOnly(
  update: Update,
): update is { $set?: Record<string, unknown>; $unset?: Record<string, unknown> } {
  for (const [operator, fields] of Object.entries(update)) {
    if (operator !== "$set" && operator !== "$unset") return false;
    if (typeof fields !== "object" || fields === null) return false;
    for (const field of Object.keys(fields)) {
      if (field.includes(".") || field.startsWith("$") || field === "_id" || field === "__proto__")
        return false;
    }
  }
  return true;
}

/**
 * A new document: the stored one's fields (shared: stored documents are replaced, never
 * changed), then the set values, deep-cloned so the caller's update object never aliases stored
 * state.
 */
function setFields(
  stored: Document,
  update: { $set?: Record<string, unknown>; $unset?: Record<string, unknown> },
): Document {
  const next: Document = { ...stored };
  for (const [field, value] of Object.entries(update.$set ?? {})) next[field] = clone(value);
  for (const field of Object.keys(update.$unset ?? {})) delete next[field];
  return next;
}

/** A deep copy: plain objects and arrays by hand (several times faster), anything else structured-cloned. */
function clone(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const copy = new Array(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = clone(value[i]);
    return copy;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return structuredClone(value);
  // A spread copies the fields in the source's layout (a parsed object's are inside it, where
  // fields added one by one to {} spill into a separate store); then the nested values are copied.
  const copy: Record<string, unknown> = { ...value };
  for (const key in copy) {
    const field = copy[key];
    if (typeof field !== "object" || field === null) continue;
    // A parsed "__proto__" key is an own field; assigning it would set the copy's prototype.
    if (key === "__proto__")
      Object.defineProperty(copy, key, {
        value: clone(field),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else copy[key] = clone(field);
  }
  return copy;
}

/**
 * Freezes a stored document's plain objects and arrays, at every depth (parts shared with an older
 * version are frozen already). Anything else (a Date, a buffer) is left as it is, as `clone` copies
 * it by structuredClone.
 */
function deepFreeze(value: object): void {
  if (Object.isFrozen(value)) return;
  if (!Array.isArray(value) && Object.getPrototypeOf(value) !== Object.prototype) return;
  Object.freeze(value);
  for (const field of Object.values(value)) {
    if (typeof field === "object" && field !== null) deepFreeze(field);
  }
}

/**
 * Any other update, by mingo on a deep copy that is swapped in afterwards, so an update that
 * throws half way leaves the store untouched.
 */
function mingoUpdate(stored: Document, update: Update): Document {
  const next = structuredClone(stored);
  applyUpdate(next, update, undefined, undefined, { cloneMode: "deep" });
  return next;
}
