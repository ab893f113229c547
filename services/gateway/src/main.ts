import type { AddressInfo } from "node:net";
import {
  isEntryPoint,
  runAsProcess,
  type ServiceDefinition,
  type StartOptions,
  startService,
} from "@cheese/service-kit";
import { serve } from "@hono/node-server";
import { createApp } from "./app.ts";
import { createAuthorizer } from "./auth/authorize.ts";
import { type GatewayConfig, gatewayConfigSchema } from "./config.ts";

export const gatewayService: ServiceDefinition<GatewayConfig> = {
  name: "gateway",
  configSchema: gatewayConfigSchema,
  needs: {},
  async start(ctx) {
    const app = createApp({
      bus: ctx.bus,
      logger: ctx.logger,
      rpcTimeoutMs: ctx.config.RPC_TIMEOUT,
      authorize: createAuthorizer(),
    });
    const server = serve({
      fetch: app.fetch,
      port: ctx.config.GATEWAY_PORT,
      hostname: ctx.config.GATEWAY_HOST,
    });
    await new Promise<void>((resolve, reject) => {
      server.once("listening", resolve);
      server.once("error", reject);
    });
    const { port } = server.address() as AddressInfo;
    ctx.logger.info({ url: `http://${ctx.config.GATEWAY_HOST}:${port}` }, "gateway listening");
    ctx.onStop({
      close: () =>
        new Promise<void>((resolve) => {
          // Stop accepting connections, let in-flight requests finish.
          server.close(() => resolve());
          if ("closeIdleConnections" in server) server.closeIdleConnections();
        }),
    });
  },
};

export const start = (options?: StartOptions) => startService(gatewayService, options);

if (isEntryPoint(import.meta.url)) void runAsProcess(start);
