// The production adapter has its own entry, @cheese/event-store/eventstoredb, so its client is loaded
// only by the processes that use it.
export * from "./port.ts";
export { createSqliteEventStore, type SqliteEventStoreOptions } from "./sqlite.ts";
