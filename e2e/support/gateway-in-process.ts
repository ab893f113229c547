import { start as startCatalogue } from "@cheese/catalogue";
import { start as startGateway } from "@cheese/gateway";
import { createInProcessBroker, silentLogger } from "@cheese/messaging";
import { start as startNotification } from "@cheese/notification";
import { start as startOrdering } from "@cheese/ordering";
import { createLogger, type RunningService, type StartOptions } from "@cheese/service-kit";
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
 * console) without the launcher's processes; `anotherGateway` starts one more replica. `gateway.app` takes requests in-process and
 * `gateway.tokens` issues tokens, as the gateway's own wiring made them; `broker` connects
 * stand-ins of other services.
 */
export async function gatewayWith(
  behind: Partial<Record<Behind, Record<string, string>>>,
  rpcTimeout = "3s",
) {
  const broker = createInProcessBroker({ logger: silentLogger });
  const data = tempDir("gateway-in-process");
  const common = { DATA_DIR: data.path, LOG_LEVEL: "silent" };
  const started: RunningService[] = [];
  const options = (name: string, env: Record<string, string>): StartOptions => ({
    env: { ...common, ...env },
    bus: broker.connect(name),
    logger: createLogger(name, "silent"),
  });
  for (const [name, env] of Object.entries(behind) as [Behind, Record<string, string>][]) {
    started.push(await starters[name](options(name, env)));
  }
  const startOneGateway = async (env: Record<string, string> = {}) => {
    const gateway = await startGateway(
      options("gateway", {
        ...defaultCredentials,
        GATEWAY_PORT: "0",
        PUBLIC_URL,
        RPC_TIMEOUT: rpcTimeout,
        ...env,
      }),
    );
    started.push(gateway);
    return gateway.wired;
  };
  const gateway = await startOneGateway();
  return {
    broker,
    gateway,
    /**
     * Another gateway replica: same bus, same DATA_DIR (so the same signing key), with `env`
     * over the suites' variables.
     */
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
