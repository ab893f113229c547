import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import { serve } from "@hono/node-server";
import { createConsoleApp } from "./app.tsx";

export interface RunningConsole {
  /** Where the console listens (loopback), what the gateway forwards `/console` to (`CONSOLE_URL`). */
  url: string;
  stop(): Promise<void>;
}

/** `http://host:port` for a listen address; the any-address reached on loopback. */
function urlOf(host: string, port: number | string): string {
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return `http://${isIP(reachable) === 6 ? `[${reachable}]` : reachable}:${port}`;
}

/**
 * The console beside a gateway, from that gateway's configuration: it listens on a loopback port
 * of its own and calls the API at the gateway's listen address (`GATEWAY_HOST`, `GATEWAY_PORT`)
 * with the operator keys of `API_KEYS`; its pages redirect to `PUBLIC_URL`, as the gateway's do.
 */
export async function startConsole(
  env: Record<string, string | undefined>,
  log?: { warn(message: string): void },
): Promise<RunningConsole> {
  const apiUrl = urlOf(env.GATEWAY_HOST || "127.0.0.1", env.GATEWAY_PORT || "8080");
  const app = createConsoleApp({
    apiUrl,
    apiKeys: env.API_KEYS ?? "",
    publicUrl: env.PUBLIC_URL || apiUrl,
    ...(log ? { log } : {}),
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(started));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: urlOf("127.0.0.1", port),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeIdleConnections" in server) server.closeIdleConnections();
      }),
  };
}
