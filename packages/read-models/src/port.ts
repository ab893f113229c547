/**
 * The read-model port: collections queried with MongoDB's filter, sort and update syntax.
 * Adapters: MongoDB (production) and in-memory collections evaluated by mingo (embedded,
 * rebuilt from the event store at start). Only the subset below is supported, on purpose.
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

export interface FindOptions {
  sort?: Sort;
  limit?: number;
  skip?: number;
}

export interface Collection<T extends Document = Document> {
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
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
  deleteMany(filter: Filter): Promise<number>;
}

export interface ReadModelStore {
  collection<T extends Document = Document>(name: string): Collection<T>;
  /** Global event-store position a projection has applied up to, or undefined if none yet. */
  getCheckpoint(projection: string): Promise<number | undefined>;
  setCheckpoint(projection: string, position: number): Promise<void>;
  /** True when the store persists across restarts (MongoDB); false for in-memory collections. */
  readonly durable: boolean;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
