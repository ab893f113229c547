import { dockerUnavailableReason } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "../support/credentials.ts";
import { type ProductionStack, startProductionStack } from "../support/production-stack.ts";
import { json, type RunningSystem, startSystem } from "../support/system.ts";

/**
 * The services on the production stack (EventStoreDB, MongoDB, NATS, MinIO in containers).
 * `pnpm test:e2e:containers` runs every e2e suite that way; this file makes the plain
 * `pnpm test` try it too, and say why when it cannot.
 */
const reason = await dockerUnavailableReason();
if (reason) console.warn(`production-stack e2e suite skipped: ${reason}`);

describe.skipIf(reason !== undefined)(
  `services on EventStoreDB, MongoDB, NATS and MinIO${reason ? ` (skipped: ${reason})` : ""}`,
  () => {
    let stack: ProductionStack;
    let system: RunningSystem;
    beforeAll(async () => {
      stack = await startProductionStack();
      system = await startSystem({ env: stack.env, readyTimeoutMs: 120_000 });
    }, 300_000);
    afterAll(async () => {
      await system?.stop();
      await stack?.stop();
    });

    it("reports the production adapters in use", () => {
      expect(system.output()).not.toContain("in-process bus");
    });

    it("creates a cheese and reads it back, and again after the catalogue is killed", async () => {
      const auth = await operatorHeaders(system);
      const created = await fetch(`${system.baseUrl}/cheeses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth.bearer },
        body: JSON.stringify({ name: "Gruyère", category: { name: "Hard" }, pricePerKg: 35 }),
      });
      expect(created.status).toBe(201);
      const cheese = await json(created);
      const read = await fetch(`${system.baseUrl}/cheeses/${cheese.id}`, { headers: auth.apiKey });
      expect(await json(read)).toEqual(cheese);
      const [catalogue] = system.pids().catalogue ?? [];
      process.kill(catalogue!, "SIGKILL");
      const again = () => fetch(`${system.baseUrl}/cheeses/${cheese.id}`, { headers: auth.apiKey });
      await expect.poll(async () => (await again()).status, { timeout: 60_000, interval: 250 }).toBe(200);
      expect(await json(await again())).toEqual(cheese);
    });
  },
);
