import type { AddressInfo } from "node:net";
import { ReadCache } from "@cheese/catalogue/read-cache";
import { portInUse, type ServiceDefinition, type StartOptions, startService } from "@cheese/service-kit";
import { createApp } from "./app.ts";
import { type GatewayConfig, gatewayConfigSchema } from "./config.ts";
import { defaultPublicUrl } from "./public-url.ts";
import { createGatewayServer } from "./server.ts";

/** What the gateway's wiring gives back: its app (requests can be made of it in-process). */
export interface GatewayWiring {
  app: ReturnType<typeof createApp>;
}

export const gatewayService: ServiceDefinition<GatewayConfig, GatewayWiring> = {
  name: "gateway",
  configSchema: gatewayConfigSchema,
  needs: { blobs: true },
  // The wiring of the service, production's and the tests' alike (startService runs it; what
  // it returns is `RunningService.wired`).
  async start(ctx) {
    const { config } = ctx;
    // The app is made as soon as the port is known (PUBLIC_URL, and so the issuer, default to
    // it), before any request can have been read.
    let app: ReturnType<typeof createApp> | undefined;
    const server = createGatewayServer((request, env) => app!.fetch(request, env), { logger: ctx.logger });
    await new Promise<void>((resolve, reject) => {
      server.once("listening", resolve);
      server.once("error", (error) => reject(portInUse(error, "GATEWAY_PORT") ?? error));
      server.listen(config.GATEWAY_PORT, config.GATEWAY_HOST);
    });
    const { port } = server.address() as AddressInfo;
    const publicUrl = config.PUBLIC_URL ?? defaultPublicUrl(config.GATEWAY_HOST, port);
    const issuer = config.JWT_ISSUER ?? publicUrl;
    let readCache: ReadCache | undefined;
    if (config.READ_CACHE === "on") {
      readCache = new ReadCache(ctx.bus, {
        maxBytes: config.READ_CACHE_MB * 1024 * 1024,
        maxAgeMs: config.READ_CACHE_MAX_AGE,
        clock: ctx.clock,
      });
      ctx.onStop(readCache.follow());
    }
    app = createApp(
      {
        bus: ctx.bus,
        blobs: ctx.blobs,
        logger: ctx.logger,
        clock: ctx.clock,
        rpcTimeoutMs: config.RPC_TIMEOUT,
        publicUrl,
        consoleUrl: config.CONSOLE_URL,
        readCache,
        addCheck: (name, check) => ctx.addCheck(name, check),
        auth: {
          operatorKeys: config.API_KEYS,
          oauthClients: config.OAUTH_CLIENTS,
          anonymousPlan: config.ANON_PLAN,
          trustedProxies: config.TRUSTED_PROXIES,
          issuer,
        },
      },
      { rateLimits: config.RATE_LIMIT_PLANS },
    );
    ctx.logger.info({ url: `http://${config.GATEWAY_HOST}:${port}`, publicUrl }, "gateway listening");
    ctx.onStop({
      close: () =>
        new Promise<void>((resolve) => {
          // Stop accepting connections, let in-flight requests finish.
          server.close(() => resolve());
          if ("closeIdleConnections" in server) server.closeIdleConnections();
        }),
    });
    return { app };
  },
};

export const start = (options?: StartOptions) => startService(gatewayService, options);
