import { createInProcessBroker } from "@cheese/messaging";
import { type ReadinessCheck, runChecks } from "@cheese/service-kit";
import { makeRevocationsBucket } from "@cheese/service-testing/stand-ins";
import { describe, expect, it } from "vitest";
import { backendServices } from "../src/config.ts";
import { testGateway } from "./support.ts";

describe("the gateway's /readyz", () => {
  it("is 503 naming revocations until credentials can be checked, then 200; its health port's too", async () => {
    const broker = createInProcessBroker();
    const bus = broker.connect("gateway");
    const services = broker.connect("services");
    for (const service of backendServices)
      services.serve(`${service}.health`, { queue: service }, async () => ({ ready: true }));
    // The customer service has not made the revocations bucket yet.
    const healthPort: Record<string, ReadinessCheck> = {};
    const { app, cleanup } = await testGateway(bus, 1000, {
      revocations: false,
      addCheck: (name, check) => {
        healthPort[name] = check;
      },
    });
    try {
      const before = await app.request("/readyz");
      expect(before.status).toBe(503);
      expect(before.headers.get("retry-after")).toBe("2");
      expect(await before.json()).toMatchObject({
        code: 503,
        checks: { nats: "up", revocations: "down", catalogue: "up", customer: "up" },
      });
      // The process's own /readyz (the probes' port) runs the same check.
      expect((await runChecks(healthPort)).checks).toEqual({ revocations: "down" });

      await makeRevocationsBucket(services);
      await expect
        .poll(async () => (await app.request("/readyz")).status, { timeout: 5_000, interval: 100 })
        .toBe(200);
      expect(await (await app.request("/readyz")).json()).toMatchObject({
        status: "ready",
        checks: { nats: "up", revocations: "up" },
      });
      expect((await runChecks(healthPort)).checks).toEqual({ revocations: "up" });
    } finally {
      await cleanup();
      await services.close();
      await bus.close();
    }
  });
});
