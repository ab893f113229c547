import { aggregate, update as applyUpdate, find, Query } from "mingo";
import {
  byIdOnly,
  droppedVersion,
  filterFields,
  isDeclared,
  type QueryShape,
  UndeclaredQueryError,
  versionedName,
} from "./declarations.ts";
import type {
  Collection,
  CollectionDefinition,
  Document,
  Filter,
  FindOptions,
  ReadModelStore,
  Update,
} from "./port.ts";
import { sortWithIdTieBreak } from "./sort.ts";

export interface MemoryReadModelsOptions {
  /**
   * Refuse (throw) a query on a defined collection that its definition does not declare, so the
   * declarations, and the indexes made from them, stay true to the code. Default: under test
   * (NODE_ENV=test, as vitest sets it).
   */
  checkQueries?: boolean;
}

/**
 * Read models held in memory and queried by mingo, so filters, sorts and update operators behave
 * as MongoDB's do. Not durable: services rebuild them from the event store at start.
 */
export function createMemoryReadModels(options: MemoryReadModelsOptions = {}): ReadModelStore {
  const checkQueries = options.checkQueries ?? process.env.NODE_ENV === "test";
  const collections = new Map<string, Collection>();
  const checkpoints = new Map<string, number>();
  /** Logical name -> the physical name of its current version, and its definition. */
  const defined = new Map<string, { physical: string; definition: CollectionDefinition }>();
  return {
    durable: false,
    collection<T extends Document = Document>(name: string): Collection<T> {
      const current = defined.get(name);
      const physical = current?.physical ?? name;
      let collection = collections.get(physical);
      if (!collection) {
        const check =
          checkQueries && current
            ? (shape: QueryShape) => {
                if (byIdOnly(shape) || current.definition.queries.some((query) => isDeclared(query, shape)))
                  return;
                throw new UndeclaredQueryError(name, shape);
              }
            : undefined;
        collection = memoryCollection(check);
        collections.set(physical, collection);
      }
      return collection as unknown as Collection<T>;
    },
    async defineProjection({ name, version, collections: definitions }) {
      for (const definition of definitions) {
        defined.set(definition.name, { physical: versionedName(definition.name, version), definition });
        for (const physical of [...collections.keys()]) {
          if (droppedVersion(physical, definition.name, version)) collections.delete(physical);
        }
      }
      for (const key of [...checkpoints.keys()]) {
        if (droppedVersion(key, name, version)) checkpoints.delete(key);
      }
      return versionedName(name, version);
    },
    async getCheckpoint(projection) {
      return checkpoints.get(projection);
    },
    async setCheckpoint(projection, position) {
      checkpoints.set(projection, position);
    },
    async ping() {
      return true;
    },
    async close() {},
  };
}

function memoryCollection(check?: (shape: QueryShape) => void): Collection {
  const documents = new Map<Document["_id"], Document>();
  const checked = (filter: Filter, sort?: FindOptions["sort"], groupBy?: string) =>
    check?.({ fields: filterFields(filter), sort, groupBy });
  // Tombstones (see port.ts deleteOne) are stored but never read.
  const matching = (filter: Filter): Document[] => {
    const query = new Query(filter);
    return [...documents.values()].filter((document) => !document._deleted && query.test(document));
  };
  // Stored documents never leave the store: callers get copies, so mutating a result is harmless.
  const copy = (document: Document): Document => structuredClone(document);
  const revisionAllows = (stored: Document, revision: number): boolean =>
    stored._revision === undefined || (stored._revision as number) < revision;

  return {
    async findOne(filter) {
      checked(filter);
      // Like MongoDB's findOne without a sort: which match comes back when several do is unspecified.
      const query = new Query(filter);
      for (const document of documents.values()) {
        if (!document._deleted && query.test(document)) return copy(document);
      }
      return null;
    },
    async find(filter: Filter, options: FindOptions = {}) {
      checked(filter, options.sort);
      // Filter first so the sort only touches matches; only the returned page is copied.
      let cursor = find(matching(filter), {}).sort(sortWithIdTieBreak(options.sort));
      if (options.skip) cursor = cursor.skip(options.skip);
      // As in MongoDB, a limit of 0 means no limit.
      if (options.limit) cursor = cursor.limit(options.limit);
      return (cursor.all() as Document[]).map(copy);
    },
    async count(filter = {}) {
      checked(filter);
      return matching(filter).length;
    },
    async countBy(field, filter = {}) {
      checked(filter, undefined, field);
      // The same $group as the MongoDB adapter, so missing fields count under "null" in both.
      const groups = aggregate(matching(filter), [{ $group: { _id: `$${field}`, count: { $sum: 1 } } }]);
      return Object.fromEntries(groups.map((group) => [String(group._id), group.count as number]));
    },
    async upsert(id, revision, update: Update) {
      const stored = documents.get(id);
      if (stored && !revisionAllows(stored, revision)) return false;
      // Update a copy and swap it in, so an update that throws half way leaves the store untouched;
      // deep-cloned values keep the caller's update object from aliasing stored state.
      const next: Document = stored && !stored._deleted ? copy(stored) : { _id: id };
      applyUpdate(next, update, undefined, undefined, { cloneMode: "deep" });
      if (next._id !== id) throw new Error(`upsert may not change _id (${String(id)})`);
      next._revision = revision;
      documents.set(id, next);
      return true;
    },
    async deleteOne(id, revision) {
      const stored = documents.get(id);
      if (revision === undefined) return stored !== undefined && !stored._deleted && documents.delete(id);
      if (stored && !revisionAllows(stored, revision)) return false;
      documents.set(id, { _id: id, _revision: revision, _deleted: true });
      return stored !== undefined && !stored._deleted;
    },
    async deleteMany(filter) {
      checked(filter);
      const doomed = matching(filter);
      for (const document of doomed) documents.delete(document._id);
      return doomed.length;
    },
  };
}
