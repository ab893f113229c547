import { readFileSync } from "node:fs";
import { join } from "node:path";
import { askAgain } from "@cheese/ask-again";
import type { MessageBus } from "@cheese/messaging";
import { type BaseConfig, connectBus, type Logger } from "@cheese/service-kit";
import { type ConnectionOptions, NatsError, nkeyAuthenticator } from "nats";
import type { RunningSystem } from "./running-system.ts";

/**
 * The system's NATS as one of its services (`packages/messaging/src/permissions.ts`): that
 * service's identity, and so only what that service may do, connected as the services connect
 * (`connectBus`). A service's connection gives up a dial after 3 s, so that a node cut off is left
 * for the next one; a test process beside other suites on a loaded machine can take longer to
 * dial, so a dial that timed out is tried again, three tries in all.
 */
export function busAs(system: RunningSystem, service: string, logger?: Logger): Promise<MessageBus> {
  return askAgain(() => connectBus(busConfig(system), service, logger), {
    pauseMs: 100,
    tries: 3,
    retryOn: (error) => error instanceof NatsError && error.code === "TIMEOUT",
  });
}

/** The configuration `connectBus` takes to attach to the system's NATS as one of its services. */
function busConfig(system: RunningSystem): BaseConfig {
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
