import {
  type Collection as DriverCollection,
  type Filter as DriverFilter,
  MongoClient,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
} from "mongodb";
import { droppedVersion, generationName, versionedName } from "./declarations.ts";
import {
  type Collection,
  type CollectionDefinition,
  type Document,
  type Filter,
  type FindOptions,
  type Generation,
  type ProjectionDefinition,
  type ReadModelStore,
  ReadModelsUnavailableError,
} from "./port.ts";
import { sortWithIdTieBreak } from "./sort.ts";

export interface MongoReadModelsOptions {
  url: string;
  /** Database name; defaults to the one in the URL, else the driver's default ("test"). */
  database?: string;
  /**
   * Deadline of every operation, server selection and retries included (the driver's `timeoutMS`);
   * past it the operation fails with ReadModelsUnavailableError. Services set it under their RPC
   * deadline. Default: none (the driver's 30 s server selection).
   */
  timeoutMs?: number;
}

const CHECKPOINTS = "_checkpoints";
/** Which generation of each projection version reads reach (port.ts, Generation). */
const GENERATIONS = "_generations";
const PING_TIMEOUT_MS = 2_000;

/**
 * Server error codes of a node that cannot serve now: not (or no longer) the primary, stepping
 * down, shutting down, a host out of reach, a time limit (the driver's own list, which it does
 * not export: NotWritablePrimary, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary, LegacyNotPrimary,
 * PrimarySteppedDown, ShutdownInProgress, InterruptedAtShutdown, InterruptedDueToReplStateChange,
 * HostUnreachable, HostNotFound, NetworkTimeout, SocketException, ExceededTimeLimit,
 * MaxTimeMSExpired).
 */
const UNAVAILABLE_CODES = new Set([
  10107, 13435, 13436, 10058, 189, 91, 11600, 11602, 6, 7, 89, 9001, 262, 50,
]);

/** Whether the driver's error means "MongoDB cannot answer now" rather than "this request is wrong". */
function isTransient(error: unknown): boolean {
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoOperationTimeoutError
  )
    return true;
  if (!(error instanceof MongoError)) return false;
  if (
    error.hasErrorLabel(MongoErrorLabel.RetryableWriteError) ||
    error.hasErrorLabel(MongoErrorLabel.RetryableError) ||
    error.hasErrorLabel(MongoErrorLabel.SystemOverloadedError)
  )
    return true;
  return typeof error.code === "number" && UNAVAILABLE_CODES.has(error.code);
}

/**
 * Runs one operation; a transient failure (after the driver's own retry) becomes
 * {@link ReadModelsUnavailableError}, a 503, never an unnamed error (500).
 */
async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (!isTransient(error)) throw error;
    throw new ReadModelsUnavailableError(`MongoDB unavailable: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Read models in MongoDB: durable, shared by replicas of a service. */
export async function createMongoReadModels(options: MongoReadModelsOptions): Promise<ReadModelStore> {
  // timeoutMS bounds each operation, but not connect(): server selection has its own bound.
  const deadline =
    options.timeoutMs === undefined
      ? {}
      : { timeoutMS: options.timeoutMs, serverSelectionTimeoutMS: options.timeoutMs };
  const client = await guarded(() => new MongoClient(options.url, deadline).connect());
  const db = client.db(options.database);
  const checkpoints = db.collection<{ _id: string; position: number }>(CHECKPOINTS);
  /** `<projection>_v<version>` -> its live generation; null while its first build is under way. */
  const generations = db.collection<{ _id: string; live: number | null }>(GENERATIONS);
  /** Logical name -> physical name of the generation this process reads. */
  const physical = new Map<string, string>();
  const generationOf = (
    projection: ProjectionDefinition,
    version: number,
    generation: number,
  ): Generation => ({
    version,
    generation,
    key: generationName(projection.name, version, generation),
    collection: <T extends Document = Document>(name: string) =>
      mongoCollection(
        db.collection<Document>(generationName(name, version, generation)),
      ) as unknown as Collection<T>,
  });
  /** The recorded live generation (null: none yet), else (before generations were recorded) 0 if it has a checkpoint. */
  const liveOf = async (projection: ProjectionDefinition, version: number): Promise<number | undefined> => {
    const key = versionedName(projection.name, version);
    const record = await generations.findOne({ _id: key });
    if (record) return record.live ?? undefined;
    return (await checkpoints.findOne({ _id: key })) ? 0 : undefined;
  };
  const createIndexes = async (definition: CollectionDefinition, target: string) => {
    // createIndexes is idempotent: an index that exists with the same keys and options is kept.
    if (definition.indexes.length === 0) return;
    await db.collection(target).createIndexes(
      definition.indexes.map((index) => ({
        key: index.keys,
        name: indexName(index.keys),
        ...(index.unique ? { unique: true } : {}),
      })),
      // Building an index on a large collection takes what it takes: not a request's
      // deadline, which would abort the build and fail every start.
      { timeoutMS: 0 },
    );
  };
  const dropGeneration = async (projection: ProjectionDefinition, generation: Generation) => {
    for (const { name } of projection.collections)
      await db
        .dropCollection(generationName(name, generation.version, generation.generation))
        .catch(() => false);
    await checkpoints.deleteOne({ _id: generation.key });
  };
  return {
    durable: true,
    collection<T extends Document = Document>(name: string): Collection<T> {
      return mongoCollection(db.collection<Document>(physical.get(name) ?? name)) as unknown as Collection<T>;
    },
    defineProjection: (projection) =>
      guarded(async () => {
        const { name, version, collections } = projection;
        const existing = await db.listCollections({}, { nameOnly: true }).toArray();
        const generation = (await generations.findOne({ _id: versionedName(name, version) }))?.live ?? 0;
        for (const definition of collections) {
          const target = generationName(definition.name, version, generation);
          physical.set(definition.name, target);
          await createIndexes(definition, target);
          for (const { name: other } of existing) {
            if (droppedVersion(other, definition.name, version))
              await db.dropCollection(other).catch(() => false);
          }
        }
        for (const records of [CHECKPOINTS, GENERATIONS].map((n) => db.collection<{ _id: string }>(n))) {
          const stale = (await records.find({}, { projection: { _id: 1 } }).toArray())
            .map((record) => record._id)
            .filter((id) => droppedVersion(id, name, version));
          if (stale.length > 0) await records.deleteMany({ _id: { $in: stale } });
        }
        return generationName(name, version, generation);
      }),
    liveGeneration: (projection, version) =>
      guarded(async () => {
        const generation = await liveOf(projection, version);
        return generation === undefined ? undefined : generationOf(projection, version, generation);
      }),
    newGeneration: (projection, { fresh = false } = {}) =>
      guarded(async () => {
        const key = versionedName(projection.name, projection.version);
        const live = await liveOf(projection, projection.version);
        // A first build of this version: recorded as not live yet, so that a restart finding its
        // checkpoint half way does not take it for a finished one.
        // Two replicas starting it at once may both insert it (E11000): it is there either way.
        if (live === undefined)
          await generations
            .updateOne({ _id: key }, { $setOnInsert: { live: null } }, { upsert: true })
            .catch((error: unknown) => (isDuplicateKey(error) ? undefined : Promise.reject(error)));
        const generation = generationOf(projection, projection.version, live === undefined ? 0 : live + 1);
        if (fresh) await dropGeneration(projection, generation);
        for (const definition of projection.collections)
          await createIndexes(
            definition,
            generationName(definition.name, generation.version, generation.generation),
          );
        return generation;
      }),
    serve: (projection, generation) =>
      guarded(async () => {
        const record = () =>
          generations.updateOne(
            { _id: versionedName(projection.name, generation.version) },
            { $set: { live: generation.generation } },
            { upsert: true },
          );
        // As setCheckpoint: two first writes may both insert it; the loser's second try sets it.
        await record().catch((error: unknown) => (isDuplicateKey(error) ? record() : Promise.reject(error)));
        for (const { name } of projection.collections)
          physical.set(name, generationName(name, generation.version, generation.generation));
      }),
    dropGeneration: (projection, generation) => guarded(() => dropGeneration(projection, generation)),
    getCheckpoint: (projection) =>
      guarded(async () => (await checkpoints.findOne({ _id: projection }))?.position),
    async setCheckpoint(projection, position) {
      // $max: only forward, so a replica lagging behind another cannot move it back. Two first
      // writes may both try to insert it (E11000): the loser's second try raises it like any.
      const raise = () =>
        checkpoints.updateOne({ _id: projection }, { $max: { position } }, { upsert: true });
      await guarded(() =>
        raise().catch((error: unknown) => (isDuplicateKey(error) ? raise() : Promise.reject(error))),
      );
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
  const findOne = (filter: Filter) => guarded(() => collection.findOne(live(filter)));
  const find = (filter: Filter, options: FindOptions = {}) =>
    guarded(() =>
      collection
        .find(live(filter), {
          sort: sortWithIdTieBreak(options.sort),
          skip: options.skip,
          limit: options.limit,
        })
        .toArray(),
    );
  return {
    findOne,
    find,
    // The driver decodes fresh documents on every read: nothing to copy, so the same reads.
    findOneReadOnly: findOne,
    findReadOnly: find,
    async count(filter = {}) {
      return guarded(() => collection.countDocuments(live(filter)));
    },
    async countBy(field, filter = {}) {
      const groups = await guarded(() =>
        collection
          .aggregate<{ _id: unknown; count: number }>([
            { $match: live(filter) },
            { $group: { _id: `$${field}`, count: { $sum: 1 } } },
          ])
          .toArray(),
      );
      return Object.fromEntries(groups.map((group) => [String(group._id), group.count]));
    },
    async upsert(id, revision, update) {
      // When the guard fails the upsert tries to insert a second `_id`: E11000 means "already
      // applied". Two writers inserting the same new document also collide on E11000, so one retry
      // tells them apart: the loser then matches the winner's document if its revision is newer.
      for (let attempt = 1; ; attempt++) {
        try {
          return await guarded(() => upsertOnce(id, revision, update));
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          if (attempt === 2) return false;
        }
      }
    },
    async deleteOne(id, revision) {
      if (revision === undefined)
        return (
          (await guarded(() => collection.deleteOne({ _id: id, _deleted: { $ne: true } }))).deletedCount === 1
        );
      // Keep a tombstone carrying the revision, so a replica replaying an older event later
      // cannot bring the document back (the same guard as upsert).
      try {
        // "Was one there": a live document before the replacement; a tombstone over a tombstone
        // (or an upsert over nothing) deleted nothing.
        const before = await guarded(() =>
          collection.findOneAndReplace(
            { _id: id, ...olderThan(revision) },
            { _revision: revision, _deleted: true },
            { upsert: true, returnDocument: "before" },
          ),
        );
        return before !== null && before._deleted !== true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
  };
}
