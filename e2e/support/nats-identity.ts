import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { BaseConfig } from "@cheese/service-kit";
import { type ConnectionOptions, nkeyAuthenticator } from "nats";
import type { RunningSystem } from "./running-system.ts";

/**
 * What a test process attaches to the system's NATS with, as one of its services
 * (`packages/messaging/src/permissions.ts`): that service's identity, and so only what that
 * service may do. Pass the result to `connectBus(config, service)` with the same service.
 */
export function busConfig(system: RunningSystem): BaseConfig {
  const credentials = system.natsCredentials();
  return {
    NATS_URL: system.natsUrl(),
    ...(credentials ? { NATS_CREDENTIALS: credentials } : {}),
  } as BaseConfig;
}

/** nats.js connection options as `identity` (a service, or `monitor`). */
export function natsOptions(system: RunningSystem, identity: string): ConnectionOptions {
  const credentials = system.natsCredentials();
  return {
    servers: system.natsUrl(),
    ...(credentials
      ? {
          authenticator: nkeyAuthenticator(readFileSync(join(credentials, `${identity}.nk`)).subarray(0, 58)),
        }
      : {}),
  };
}
