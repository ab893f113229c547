export { createEventStoreDbStore, type EventStoreDbOptions } from "./eventstoredb.ts";
export * from "./port.ts";
export { createSqliteEventStore, type SqliteEventStoreOptions } from "./sqlite.ts";
