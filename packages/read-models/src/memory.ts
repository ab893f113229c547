import { aggregate, update as applyUpdate, find, Query } from "mingo";
import type { Collection, Document, Filter, FindOptions, ReadModelStore, Update } from "./port.ts";
import { sortWithIdTieBreak } from "./sort.ts";

/**
 * Read models held in memory and queried by mingo, so filters, sorts and update operators behave
 * as MongoDB's do. Not durable: services rebuild them from the event store at start.
 */
export function createMemoryReadModels(): ReadModelStore {
  const collections = new Map<string, Collection>();
  const checkpoints = new Map<string, number>();
  return {
    durable: false,
    collection<T extends Document = Document>(name: string): Collection<T> {
      let collection = collections.get(name);
      if (!collection) {
        collection = memoryCollection();
        collections.set(name, collection);
      }
      return collection as unknown as Collection<T>;
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

function memoryCollection(): Collection {
  const documents = new Map<Document["_id"], Document>();
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
      // Like MongoDB's findOne without a sort: which match comes back when several do is unspecified.
      const query = new Query(filter);
      for (const document of documents.values()) {
        if (!document._deleted && query.test(document)) return copy(document);
      }
      return null;
    },
    async find(filter: Filter, options: FindOptions = {}) {
      // Filter first so the sort only touches matches; only the returned page is copied.
      let cursor = find(matching(filter), {}).sort(sortWithIdTieBreak(options.sort));
      if (options.skip) cursor = cursor.skip(options.skip);
      // As in MongoDB, a limit of 0 means no limit.
      if (options.limit) cursor = cursor.limit(options.limit);
      return (cursor.all() as Document[]).map(copy);
    },
    async count(filter = {}) {
      return matching(filter).length;
    },
    async countBy(field, filter = {}) {
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
      const doomed = matching(filter);
      for (const document of doomed) documents.delete(document._id);
      return doomed.length;
    },
  };
}
