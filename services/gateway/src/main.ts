import type { AddressInfo } from "node:net";
import { join } from "node:path";
import {
  portInUse,
  type ServiceDefinition,
  type StartOptions,
  serviceDataDir,
  startService,
} from "@cheese/service-kit";
import { serve } from "@hono/node-server";
import { createApp } from "./app.ts";
import { createAuthorizer } from "./auth/authorize.ts";
import { loadSigningKey } from "./auth/signing-key.ts";
import { TokenService } from "./auth/tokens.ts";
import { type GatewayConfig, gatewayConfigSchema } from "./config.ts";

export const gatewayService: ServiceDefinition<GatewayConfig> = {
  name: "gateway",
  configSchema: gatewayConfigSchema,
  needs: { blobs: true },
  async start(ctx) {
    const { config } = ctx;
    const key = await loadSigningKey(
      join(serviceDataDir(config, "gateway"), "jwt-signing-key.json"),
      config.JWT_PRIVATE_KEY,
    );
    const app = createApp(
      {
        bus: ctx.bus,
        blobs: ctx.blobs,
        logger: ctx.logger,
        clock: ctx.clock,
        rpcTimeoutMs: config.RPC_TIMEOUT,
        authorize: createAuthorizer(),
        auth: {
          tokens: new TokenService(key, config.JWT_ISSUER, ctx.clock),
          operatorKeys: config.API_KEYS,
          oauthClients: config.OAUTH_CLIENTS,
          anonymousPlan: config.ANON_PLAN,
          trustedProxies: config.TRUSTED_PROXIES,
          issuer: config.JWT_ISSUER,
        },
      },
      { rateLimits: config.RATE_LIMIT_PLANS, oauthCodeTtlMs: config.OAUTH_CODE_TTL },
    );
    const server = serve({
      fetch: app.fetch,
      port: ctx.config.GATEWAY_PORT,
      hostname: ctx.config.GATEWAY_HOST,
    });
    await new Promise<void>((resolve, reject) => {
      server.once("listening", resolve);
      server.once("error", (error) => reject(portInUse(error, "GATEWAY_PORT") ?? error));
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
