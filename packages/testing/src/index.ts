export { dockerUnavailableReason } from "./docker.ts";
export { type NatsServerHandle, startNatsServer } from "./nats-server.ts";
export { freePort } from "./ports.ts";
export { tempDir } from "./temp-dir.ts";
