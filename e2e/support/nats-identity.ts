import { readFileSync } from "node:fs";
import { join } from "node:path";
import { askAgain } from "@cheese/ask-again";
import type { MessageBus } from "@cheese/messaging";
import { type BaseConfig, connectBus, type Logger } from "@cheese/service-kit";
import { type ConnectionOptions, connect, type NatsConnection, NatsError, nkeyAuthenticator } from "nats";
import type { RunningSystem } from "./running-system.ts";

/**
 * The system's NATS as one of its services (`packages/messaging/src/permissions.ts`): that
 * service's identity, and so only what that service may do, connected as the services connect
 * (`connectBus`).
 */
export function busAs(system: RunningSystem, service: string, logger?: Logger): Promise<MessageBus> {
  return dialAgain(() => connectBus(busConfig(system), service, logger));
}

/**
 * A plain nats.js connection as `identity` (a service, or `monitor`), for what a suite reads or
 * tries below the bus: its dial given up after 3 s as a service's is, and tried again.
 */
export function natsAs(
  system: RunningSystem,
  identity: string,
  options: ConnectionOptions = {},
): Promise<NatsConnection> {
  return dialAgain(() => connect({ ...natsOptions(system, identity), timeout: DIAL_MS, ...options }));
}

/** The services' dial timeout (`connectNatsBus`): a node not answering is left for the next. */
const DIAL_MS = 3_000;

/**
 * A test process beside other suites on a loaded machine can take longer than a service's 3 s to
 * dial (once, in CI, a dial with nats.js's default 20 s timed out): a dial that timed out is tried
 * again, three tries in all.
 */
function dialAgain<T>(dial: () => Promise<T>): Promise<T> {
  return askAgain(dial, {
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
function natsOptions(system: RunningSystem, identity: string): ConnectionOptions {
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
