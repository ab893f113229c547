import { start as startCatalogue } from "@cheese/catalogue";
import { oauthClientsSchema, type TokenClaims } from "@cheese/contracts";
import { loadSigningKey, startIdentity } from "@cheese/customer/identity";
import { start as startGateway } from "@cheese/gateway";
import { createInProcessBroker, RemoteError, serveRpc, silentLogger } from "@cheese/messaging";
import { start as startNotification } from "@cheese/notification";
import { start as startOrdering } from "@cheese/ordering";
import { createLogger, type RunningService, type StartOptions, systemClock } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { defaultCredentials } from "./system.ts";

/** The origin the gateway started here names in its links (`Location`, cursors). */
export const PUBLIC_URL = "https://cheese.example";

const starters = { catalogue: startCatalogue, ordering: startOrdering, notification: startNotification };
type Behind = keyof typeof starters;

/**
 * The gateway and the services named (each with its own variables), every one started as its
 * `main.ts` starts it, over one in-process bus and a fresh DATA_DIR, with the suites' operator
 * credentials: for what the gateway answers together with them (webhooks, dead letters, the
 * console) without the launcher's processes; `anotherGateway` starts one more replica. The customer service's authorization server stands
 * behind the gateway on its own (its code, without accounts: no password is right); `gateway.app`
 * takes requests in-process and `gateway.tokens` issues tokens as that server does; `broker`
 * connects stand-ins of other services.
 */
export async function gatewayWith(
  behind: Partial<Record<Behind, Record<string, string>>>,
  rpcTimeout = "3s",
  setup: {
    /** OAuth clients besides the suites' operator client. */
    clients?: object[];
    /** The first gateway's variables over the suites'. */
    gatewayEnv?: Record<string, string>;
  } = {},
) {
  const OAUTH_CLIENTS = JSON.stringify([
    ...JSON.parse(defaultCredentials.OAUTH_CLIENTS),
    ...(setup.clients ?? []),
  ]);
  const broker = createInProcessBroker({ logger: silentLogger });
  const data = tempDir("gateway-in-process");
  const common = { DATA_DIR: data.path, LOG_LEVEL: "silent" };
  const started: RunningService[] = [];
  const options = (name: string, env: Record<string, string>): StartOptions => ({
    env: { ...common, ...env },
    bus: broker.connect(name),
    logger: createLogger(name, "silent"),
  });
  const identityBus = broker.connect("customer");
  const identity = await startIdentity(
    {
      bus: identityBus,
      logger: createLogger("customer", "silent"),
      clock: systemClock,
      signingKey: await loadSigningKey(`${data.path}/jwt-signing-key.json`),
      clients: oauthClientsSchema.parse(OAUTH_CLIENTS),
      codeTtlMs: 60_000,
      accounts: {
        login: async () => {
          throw new RemoteError({
            status: 401,
            type: "unauthorized",
            message: "invalid username or password",
          });
        },
        principal: async (customerId) => {
          throw new RemoteError({
            status: 404,
            type: "not_found",
            message: `customer ${customerId} not found`,
          });
        },
      },
    },
    (definition, handler) => void serveRpc(identityBus, definition, { queue: "customer" }, handler),
  );
  started.push({ stop: () => identity.close() } as RunningService);
  for (const [name, env] of Object.entries(behind) as [Behind, Record<string, string>][]) {
    started.push(await starters[name](options(name, env)));
  }
  const startOneGateway = async (env: Record<string, string> = {}) => {
    const gateway = await startGateway(
      options("gateway", {
        ...defaultCredentials,
        OAUTH_CLIENTS,
        GATEWAY_PORT: "0",
        PUBLIC_URL,
        RPC_TIMEOUT: rpcTimeout,
        ...env,
      }),
    );
    started.push(gateway);
    return gateway.wired;
  };
  const gateway = await startOneGateway(setup.gatewayEnv);
  return {
    broker,
    gateway: {
      ...gateway,
      tokens: {
        issue: (claims: Omit<TokenClaims, "jti" | "iat" | "exp">, ttlSeconds: number) =>
          identity.tokens.issue(claims, ttlSeconds, PUBLIC_URL),
      },
    },
    /** Another gateway replica: same bus, same authorization server, with `env` over the suites' variables. */
    anotherGateway: startOneGateway,
    async stop() {
      for (const service of started.reverse()) await service.stop();
      data.remove();
    },
  };
}

/** The gateway and the notification service: the webhook and dead-letter routes' two rooms. */
export const gatewayAndNotification = (notificationEnv: Record<string, string> = {}) =>
  gatewayWith({ notification: notificationEnv });
