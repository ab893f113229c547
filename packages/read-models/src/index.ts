// The production adapter has its own entry, @cheese/read-models/mongo, so its client is loaded
// only by the processes that use it.
export {
  declarationProblems,
  filterFields,
  isDeclared,
  serves,
  UndeclaredQueryError,
} from "./declarations.ts";
export { createMemoryReadModels, type MemoryReadModelsOptions } from "./memory.ts";
export { queryPlanProblems } from "./plans.ts";
export type {
  Collection,
  CollectionDefinition,
  DeepReadonly,
  Document,
  Filter,
  FindOptions,
  Generation,
  IndexDefinition,
  ProjectionDefinition,
  QueryDefinition,
  ReadModelSnapshots,
  ReadModelStore,
  Sort,
  Update,
} from "./port.ts";
export { ReadModelsUnavailableError } from "./port.ts";
