export { createMemoryReadModels } from "./memory.ts";
export { createMongoReadModels, type MongoReadModelsOptions } from "./mongo.ts";
export type {
  Collection,
  Document,
  Filter,
  FindOptions,
  ReadModelStore,
  Sort,
  Update,
} from "./port.ts";
