import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { metricsRegistry } from "./metrics.ts";
import { portInUse } from "./process.ts";

export type ReadinessCheck = () => Promise<boolean>;

/**
 * The longest `/readyz` takes to answer: each check is given this long, then counts as down.
 * A probe of `/readyz` must wait longer (Kubernetes' default is 1 s): `pnpm check:deploy` checks.
 */
export const READINESS_DEADLINE_MS = 2000;

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

/**
 * A service's own `/healthz` (the process is up), `/readyz` (every dependency answers) and
 * `/metrics` (the process's metrics, Prometheus text format), on 127.0.0.1 unless told
 * otherwise. Checks run with a deadline so a hung dependency reads as not ready.
 */
export async function startHealthServer(
  port: number,
  checks: Record<string, ReadinessCheck>,
  host = "127.0.0.1",
): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
      return;
    }
    if (req.url === "/readyz") {
      void runChecks(checks).then((result) => {
        res
          .writeHead(result.ready ? 200 : 503, { "content-type": "application/json" })
          .end(JSON.stringify({ status: result.ready ? "ready" : "not_ready", checks: result.checks }));
      });
      return;
    }
    if (req.url === "/metrics") {
      void metricsRegistry.metrics().then(
        (text) => res.writeHead(200, { "content-type": metricsRegistry.contentType }).end(text),
        () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable\n"),
      );
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end('{"code":404,"message":"not found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(portInUse(error, "HEALTH_PORT") ?? error));
    server.listen(port, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export async function runChecks(
  checks: Record<string, ReadinessCheck>,
  timeoutMs = READINESS_DEADLINE_MS,
): Promise<{ ready: boolean; checks: Record<string, "up" | "down"> }> {
  const entries = await Promise.all(
    Object.entries(checks).map(
      async ([name, check]) => [name, await withDeadline(check(), timeoutMs)] as const,
    ),
  );
  const result = Object.fromEntries(entries.map(([name, up]) => [name, up ? "up" : "down"] as const));
  return { ready: entries.every(([, up]) => up), checks: result };
}

function withDeadline(check: Promise<boolean>, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    check.then(
      (up) => {
        clearTimeout(timer);
        resolve(up);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}
