export { containerImageUnavailableReason, dockerUnavailableReason } from "./docker.ts";
export { KURRENTDB_IMAGE, startKurrentDbContainer } from "./kurrentdb.ts";
export { hasMetric, metricValue, parseMetrics, type Sample, scrape } from "./metrics.ts";
export { MONGO_IMAGE, startMongoContainer } from "./mongo.ts";
export {
  type NatsClusterHandle,
  type NatsClusterNode,
  type NatsServerHandle,
  startNatsCluster,
  startNatsServer,
} from "./nats-server.ts";
export { acceptsConnections, freePort } from "./ports.ts";
export { outputOf, processAlive } from "./processes.ts";
export { S3_SLOW_DOWN, startTcpRelay, type TcpRelay } from "./relay.ts";
export { tempDir } from "./temp-dir.ts";
