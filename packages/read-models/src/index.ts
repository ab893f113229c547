export {
  declarationProblems,
  filterFields,
  isDeclared,
  serves,
  UndeclaredQueryError,
} from "./declarations.ts";
export { createMemoryReadModels, type MemoryReadModelsOptions } from "./memory.ts";
export { createMongoReadModels, type MongoReadModelsOptions } from "./mongo.ts";
export { queryPlanProblems } from "./plans.ts";
export type {
  Collection,
  CollectionDefinition,
  Document,
  Filter,
  FindOptions,
  IndexDefinition,
  ProjectionDefinition,
  QueryDefinition,
  ReadModelStore,
  Sort,
  Update,
} from "./port.ts";
