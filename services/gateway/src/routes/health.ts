import { READINESS_DEADLINE_MS, runChecks } from "@cheese/service-kit";
import type { Hono } from "hono";
import { backendServices } from "../config.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";

/** Deadline for one service's health answer, within /readyz's own: /readyz never hangs. */
const SERVICE_HEALTH_TIMEOUT_MS = READINESS_DEADLINE_MS - 500;

/**
 * `/healthz`: the process is up. `/readyz`: NATS answers, every service says it is ready, and
 * credentials can be checked (`revocations`: the revocations bucket is watched and has answered a
 * read within 30 s, `KnownRevocations.answers`).
 */
export function healthRoutes(
  app: Hono<GatewayEnv>,
  deps: GatewayDeps,
  revocations: () => Promise<boolean>,
): void {
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    const checks: Record<string, () => Promise<boolean>> = {
      nats: () => deps.bus.ping(),
      revocations,
    };
    for (const service of backendServices) {
      checks[service] = async () => {
        const answer = (await deps.bus.request(
          `${service}.health`,
          {},
          { timeoutMs: SERVICE_HEALTH_TIMEOUT_MS },
        )) as {
          ready?: boolean;
        };
        return answer?.ready === true;
      };
    }
    const result = await runChecks(checks, READINESS_DEADLINE_MS);
    if (!result.ready) c.header("Retry-After", "2");
    return c.json(
      result.ready
        ? { status: "ready", checks: result.checks }
        : { code: 503, type: "service_unavailable", message: "not ready", checks: result.checks },
      result.ready ? 200 : 503,
    );
  });
}
