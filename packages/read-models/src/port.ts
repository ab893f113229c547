/**
 * The read-model port: collections queried with MongoDB's filter, sort and update syntax.
 * Adapters: MongoDB (production) and in-memory collections evaluated by mingo (embedded,
 * loaded from a snapshot and the events after it at start). Only the subset below is supported,
 * on purpose.
 */

/** A MongoDB query filter, e.g. `{ status: { $in: ["available"] }, name: /^Brie/i }`. */
export type Filter = Record<string, unknown>;
/** A MongoDB sort specification, e.g. `{ name: 1, _id: 1 }`. */
export type Sort = Record<string, 1 | -1>;
/** A MongoDB update document using `$set`, `$unset`, `$inc`, `$push`, `$pull`, `$addToSet`. */
export type Update = Record<string, unknown>;

export interface Document {
  _id: string | number;
  [key: string]: unknown;
}

/**
 * A value that may not be changed, at any depth: what a read-only find hands out (the stored
 * document itself, shared with the store and with every other reader).
 */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer Item)[]
    ? readonly DeepReadonly<Item>[]
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

export interface FindOptions {
  sort?: Sort;
  limit?: number;
  skip?: number;
}

export interface Collection<T extends Document = Document> {
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  /**
   * `findOne` and `find` for a caller that only reads what it gets (a reply encoded, a page's
   * keys taken): the documents without a copy where the adapter holds them (in memory), typed
   * read-only at every depth. What they return never changes afterwards: a write replaces a
   * stored document, it never changes one in place.
   */
  findOneReadOnly(filter: Filter): Promise<DeepReadonly<T> | null>;
  findReadOnly(filter: Filter, options?: FindOptions): Promise<DeepReadonly<T>[]>;
  count(filter?: Filter): Promise<number>;
  /** Count of documents per value of `field` among those matching `filter`. */
  countBy(field: string, filter?: Filter): Promise<Record<string, number>>;
  /**
   * Applies `update` to the document `_id` (creating it when absent) only if the stored
   * `_revision` is lower than `revision`, then stores `_revision = revision`. A projection that
   * replays an event it already applied therefore changes nothing. Returns whether it applied.
   */
  upsert(id: T["_id"], revision: number, update: Update): Promise<boolean>;
  /**
   * Deletes the document; returns whether one was there. With a revision the same guard as
   * upsert applies, and a tombstone keeps that revision (invisible to every read) so an older
   * event replayed later, e.g. by a lagging replica, cannot bring the document back; a higher
   * revision may create it anew.
   */
  deleteOne(id: T["_id"], revision?: number): Promise<boolean>;
}

/** An index: keys in order, as MongoDB's createIndex takes them. */
export interface IndexDefinition {
  keys: Sort;
  unique?: boolean;
}

/**
 * A query a service runs on a collection, declared next to the collection so that its index is
 * declared with it (docs/architecture.md, "Read models"). `filter` is an example of the filter
 * with every field the query may test; `optional` lists the fields it may leave out.
 */
export interface QueryDefinition {
  /** Who runs it, e.g. "GET /v2/cheeses sorted by name". */
  name: string;
  filter: Filter;
  optional?: string[];
  /** The sort it asks for; the same sort reversed is the same query. */
  sort?: Sort;
  /** countBy's field, for a count per value. */
  groupBy?: string;
  /** Why this query may read every live document when its optional fields are absent. */
  scans?: string;
}

export interface CollectionDefinition {
  name: string;
  indexes: IndexDefinition[];
  queries: QueryDefinition[];
}

/** The read models one projection writes, at the version of its code. */
export interface ProjectionDefinition {
  name: string;
  /**
   * Raise it whenever the projection's output changes (a new field, another shape): the
   * collections are then rebuilt from the events, beside the previous version's.
   */
  version: number;
  collections: CollectionDefinition[];
}

/**
 * The store itself cannot answer: unreachable, no primary to write to (an election, a step-down),
 * or past its deadline. Transient: the same call may succeed later. Services answer it with 503 and
 * Retry-After; `dependency` names what is down (every port's unavailable error has it).
 */
export class ReadModelsUnavailableError extends Error {
  override readonly name = "ReadModelsUnavailableError";
  readonly dependency = "read models";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * One build of a projection's collections (docs/architecture.md, "Rebuilds without downtime"): a
 * version, and a generation of that version (0, then one more for each rebuild on request), each
 * under names of its own (`<collection>_v<version>`, `<collection>_v<version>_g<generation>`) with
 * a checkpoint of its own (`key`), so a rebuild writes beside the generation reads reach.
 */
export interface Generation {
  readonly version: number;
  readonly generation: number;
  /** Its checkpoint key: `<projection>_v<version>`, or `<projection>_v<version>_g<generation>`. */
  readonly key: string;
  /** This generation's collection `name` (one the projection defines), whichever one reads reach. */
  collection<T extends Document = Document>(name: string): Collection<T>;
}

export interface ReadModelStore {
  /**
   * Reaches a collection. Collections that a projection defines are those of the generation it
   * serves (`serve`; at first its current version's live generation), and the queries on them are
   * checked against their declarations where the adapter checks.
   */
  collection<T extends Document = Document>(name: string): Collection<T>;
  /**
   * Declares a projection's collections at its version: `collection(name)` reaches that
   * version's live generation from then on (the one last served, else generation 0), each
   * declared index exists (created if missing, idempotent), and collections, checkpoints and
   * generations of versions older than the previous one are dropped (the previous one stays for
   * replicas still running it). Returns that generation's checkpoint key.
   */
  defineProjection(definition: ProjectionDefinition): Promise<string>;
  /**
   * The live generation of the projection (defined before) at `version`, its current one or the
   * previous: the one last served at that version, else a generation 0 that has a checkpoint;
   * undefined when there is none (never built, or a first build of that version beside the
   * previous one is not finished). Creates nothing.
   */
  liveGeneration(definition: ProjectionDefinition, version: number): Promise<Generation | undefined>;
  /**
   * A generation of the projection's current version beside the live one, for a rebuild: the one
   * after the live generation (0 when that version has none), its indexes made. A build of it that
   * was interrupted is kept (its checkpoint says how far it got) unless `fresh`, which drops it
   * first. Reads keep reaching the generation they reached.
   */
  newGeneration(definition: ProjectionDefinition, options?: { fresh?: boolean }): Promise<Generation>;
  /**
   * Makes `generation` the one `collection(name)` reaches, and records it as its version's live
   * generation (in MongoDB for every replica and the next start).
   */
  serve(definition: ProjectionDefinition, generation: Generation): Promise<void>;
  /** Drops a generation's collections and checkpoint. */
  dropGeneration(definition: ProjectionDefinition, generation: Generation): Promise<void>;
  /**
   * The projection writing into `generation` has applied every event that existed when it
   * started: work the adapter put off while the collections filled from empty (the in-memory
   * indexes, built once by a sort instead of by an insert per document) is done now, before the
   * projection is ready. Adapters that put nothing off leave it out.
   */
  caughtUp?(definition: ProjectionDefinition, generation: Generation): Promise<void>;
  /** Global event-store position a projection has applied up to, or undefined if none yet. */
  getCheckpoint(projection: string): Promise<number | undefined>;
  /**
   * Raises the projection's checkpoint to `position`; never lowers it (a position at or below the
   * stored one changes nothing), so a replica lagging behind another cannot move it back.
   */
  setCheckpoint(projection: string, position: number): Promise<void>;
  /** True when the store persists across restarts (MongoDB); false for in-memory collections. */
  readonly durable: boolean;
  /**
   * Snapshots of a projection's collections, where the adapter keeps them in memory and was given
   * somewhere to write them (docs/architecture.md, "Snapshots"); undefined elsewhere.
   */
  readonly snapshots?: ReadModelSnapshots | undefined;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * A projection's collections saved whole with the position they are exact at, so that a start
 * loads them and applies only the events after it instead of every event ever recorded.
 */
export interface ReadModelSnapshots {
  /**
   * Replaces the collections of the projection's generation 0 at `projection.version` (defined by
   * `defineProjection` before, at that version or the next) with those of its snapshot at that
   * version, makes that generation the version's live one, and returns the snapshot's position;
   * `ignored` with the reason, the collections untouched, when there is none or it cannot be used
   * (another version, damaged, cut short).
   */
  restore(
    projection: ProjectionDefinition,
    options: {
      /**
       * The event store's head: a snapshot past it was made of other events (the store was
       * emptied or replaced since) and is ignored.
       */
      notAfter: number;
    },
  ): Promise<{ position: number } | { ignored: string }>;
  /**
   * Saves the collections of the projection's `generation` as they are at the call, as the state
   * after every event up to `position` and none after: call it between two events, never while one
   * is half applied. The documents are captured before it returns; the file (one per version: the
   * live generation's) is written afterwards, atomically.
   */
  save(projection: ProjectionDefinition, generation: Generation, position: number): Promise<void>;
}
