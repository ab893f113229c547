export { DEADLINE_HEADER } from "./deadline.ts";
export {
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_DEAD_LETTER_AFTER_MS,
  DEFAULT_DUPLICATE_WINDOW_MS,
  DEFAULT_MAX_REDELIVERY_DELAY_MS,
  redeliveryDelayMs,
} from "./delivery.ts";
export {
  createInProcessBroker,
  createInProcessBus,
  type InProcessBroker,
  type InProcessBrokerOptions,
} from "./in-process/index.ts";
export {
  type Change,
  type Codec,
  jsonCodec,
  type KvRecord,
  KvRecords,
} from "./kv-records.ts";
export { type BusLogger, consoleLogger, silentLogger } from "./log.ts";
export {
  connectNatsBus,
  DEFAULT_EVENTS_MAX_AGE_MS,
  DEFAULT_EVENTS_MAX_BYTES,
  type NatsBusOptions,
} from "./nats/bus.ts";
export { BusAuthorizationError, ReplicasRefusedError } from "./nats/errors.ts";
export { type OperatorRequestOptions, operatorRequest } from "./operator-request.ts";
export * from "./port.ts";
export {
  type BodyMetaOf,
  type CallOptions,
  CheckedText,
  CheckedTexts,
  type ConsumeEventsOptions,
  callRpc,
  callRpcPassing,
  checkedJson,
  consumeEvents,
  defineEvent,
  defineRpc,
  type EventDefinition,
  type PassThrough,
  publishEvent,
  type RpcContext,
  type RpcDefinition,
  type ServedResult,
  serveRpc,
  type TypedEvent,
} from "./rpc.ts";
export { subjectMatches } from "./subjects.ts";
