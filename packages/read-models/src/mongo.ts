import {
  type Collection as DriverCollection,
  type Filter as DriverFilter,
  MongoClient,
  MongoServerError,
} from "mongodb";
import { droppedVersion, versionedName } from "./declarations.ts";
import type { Collection, Document, Filter, FindOptions, ReadModelStore } from "./port.ts";
import { sortWithIdTieBreak } from "./sort.ts";

export interface MongoReadModelsOptions {
  url: string;
  /** Database name; defaults to the one in the URL, else the driver's default ("test"). */
  database?: string;
}

const CHECKPOINTS = "_checkpoints";
const PING_TIMEOUT_MS = 2_000;

/** Read models in MongoDB: durable, shared by replicas of a service. */
export async function createMongoReadModels(options: MongoReadModelsOptions): Promise<ReadModelStore> {
  const client = await new MongoClient(options.url).connect();
  const db = client.db(options.database);
  const checkpoints = db.collection<{ _id: string; position: number }>(CHECKPOINTS);
  /** Logical name -> physical name of the version this process runs. */
  const physical = new Map<string, string>();
  return {
    durable: true,
    collection<T extends Document = Document>(name: string): Collection<T> {
      return mongoCollection(db.collection<Document>(physical.get(name) ?? name)) as unknown as Collection<T>;
    },
    async defineProjection({ name, version, collections }) {
      const existing = await db.listCollections({}, { nameOnly: true }).toArray();
      for (const definition of collections) {
        const target = versionedName(definition.name, version);
        physical.set(definition.name, target);
        // createIndexes is idempotent: an index that exists with the same keys and options is kept.
        if (definition.indexes.length > 0) {
          await db.collection(target).createIndexes(
            definition.indexes.map((index) => ({
              key: index.keys,
              name: indexName(index.keys),
              ...(index.unique ? { unique: true } : {}),
            })),
          );
        }
        for (const { name: other } of existing) {
          if (droppedVersion(other, definition.name, version))
            await db.dropCollection(other).catch(() => false);
        }
      }
      const stale = (await checkpoints.find({}, { projection: { _id: 1 } }).toArray())
        .map((checkpoint) => checkpoint._id)
        .filter((id) => droppedVersion(id, name, version));
      if (stale.length > 0) await checkpoints.deleteMany({ _id: { $in: stale } });
      return versionedName(name, version);
    },
    async getCheckpoint(projection) {
      return (await checkpoints.findOne({ _id: projection }))?.position;
    },
    async setCheckpoint(projection, position) {
      await checkpoints.updateOne({ _id: projection }, { $set: { position } }, { upsert: true });
    },
    async ping() {
      // A readiness probe must answer quickly, not after the driver's 30 s server selection.
      try {
        await db.command({ ping: 1 }, { signal: AbortSignal.timeout(PING_TIMEOUT_MS) });
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await client.close();
    },
  };
}

/** Stable index names, so re-creating an index at start finds it by name. */
const indexName = (keys: Record<string, number>) =>
  Object.entries(keys)
    .map(([key, direction]) => `${key}_${direction}`)
    .join("_");

/** Matches a stored document `revision` may still be applied to. */
const olderThan = (revision: number) => ({
  $or: [{ _revision: { $lt: revision } }, { _revision: { $exists: false } }],
});

/** Tombstones (see port.ts deleteOne) are stored but never read. */
const live = (filter: Filter) => ({ $and: [filter, { _deleted: { $ne: true } }] }) as DriverFilter<Document>;

const isDuplicateKey = (error: unknown) => error instanceof MongoServerError && error.code === 11000;

function mongoCollection(collection: DriverCollection<Document>): Collection {
  const upsertOnce = async (id: Document["_id"], revision: number, update: Record<string, unknown>) => {
    const $set = { ...(update.$set as object | undefined), _revision: revision };
    // Applied over a tombstone, the update starts a new document: the tombstone mark goes.
    const $unset = { ...(update.$unset as object | undefined), _deleted: "" as const };
    const result = await collection.updateOne(
      { _id: id, ...olderThan(revision) },
      { ...update, $set, $unset },
      { upsert: true },
    );
    return result.matchedCount + result.upsertedCount > 0;
  };
  const findOne = (filter: Filter) => collection.findOne(live(filter));
  const find = (filter: Filter, options: FindOptions = {}) =>
    collection
      .find(live(filter), {
        sort: sortWithIdTieBreak(options.sort),
        skip: options.skip,
        limit: options.limit,
      })
      .toArray();
  return {
    findOne,
    find,
    // The driver decodes fresh documents on every read: nothing to copy, so the same reads.
    findOneReadOnly: findOne,
    findReadOnly: find,
    async count(filter = {}) {
      return collection.countDocuments(live(filter));
    },
    async countBy(field, filter = {}) {
      const groups = await collection
        .aggregate<{ _id: unknown; count: number }>([
          { $match: live(filter) },
          { $group: { _id: `$${field}`, count: { $sum: 1 } } },
        ])
        .toArray();
      return Object.fromEntries(groups.map((group) => [String(group._id), group.count]));
    },
    async upsert(id, revision, update) {
      // When the guard fails the upsert tries to insert a second `_id`: E11000 means "already
      // applied". Two writers inserting the same new document also collide on E11000, so one retry
      // tells them apart: the loser then matches the winner's document if its revision is newer.
      for (let attempt = 1; ; attempt++) {
        try {
          return await upsertOnce(id, revision, update);
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          if (attempt === 2) return false;
        }
      }
    },
    async deleteOne(id, revision) {
      if (revision === undefined)
        return (await collection.deleteOne({ _id: id, _deleted: { $ne: true } })).deletedCount === 1;
      // Keep a tombstone carrying the revision, so a replica replaying an older event later
      // cannot bring the document back (the same guard as upsert).
      try {
        // "Was one there": a live document before the replacement; a tombstone over a tombstone
        // (or an upsert over nothing) deleted nothing.
        const before = await collection.findOneAndReplace(
          { _id: id, ...olderThan(revision) },
          { _revision: revision, _deleted: true },
          { upsert: true, returnDocument: "before" },
        );
        return before !== null && before._deleted !== true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
    async deleteMany(filter) {
      return (await collection.deleteMany(live(filter))).deletedCount;
    },
  };
}
