import { start as startGateway } from "@cheese/gateway";
import { createInProcessBroker, silentLogger } from "@cheese/messaging";
import { start as startNotification } from "@cheese/notification";
import { createLogger } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { defaultCredentials } from "./system.ts";

/** The origin the gateway started here names in its links (`Location`, cursors). */
export const PUBLIC_URL = "https://cheese.example";

/**
 * The gateway and the notification service, each started as its `main.ts` starts it, over one
 * in-process bus and a fresh DATA_DIR, with the suites' operator credentials: for what the two
 * answer together (webhooks, dead letters) without the launcher's processes. `gateway.app`
 * takes requests in-process and `gateway.tokens` issues tokens, as the gateway's own wiring
 * made them; `broker` connects stand-ins of other services.
 */
export async function gatewayAndNotification(
  notificationEnv: Record<string, string> = {},
  rpcTimeout = "3s",
) {
  const broker = createInProcessBroker({ logger: silentLogger });
  const data = tempDir("gateway-and-notification");
  const common = { DATA_DIR: data.path, LOG_LEVEL: "silent" };
  const notification = await startNotification({
    env: { ...common, ...notificationEnv },
    bus: broker.connect("notification"),
    logger: createLogger("notification", "silent"),
  });
  const gateway = await startGateway({
    env: { ...common, ...defaultCredentials, GATEWAY_PORT: "0", PUBLIC_URL, RPC_TIMEOUT: rpcTimeout },
    bus: broker.connect("gateway"),
    logger: createLogger("gateway", "silent"),
  });
  return {
    broker,
    gateway: gateway.wired,
    async stop() {
      await gateway.stop();
      await notification.stop();
      data.remove();
    },
  };
}
