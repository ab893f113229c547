import { containerImageUnavailableReason } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "../support/credentials.ts";
import { type ProductionStack, productionStores, startProductionStack } from "../support/production-stack.ts";
import { json, type RunningSystem, startSystem } from "../support/system.ts";

/**
 * The services on the production stores (KurrentDB, MongoDB, MinIO in containers), started
 * by `pnpm start`. It needs all three images; it says which cannot be had, and why, when it skips.
 */
const missing = (
  await Promise.all(
    productionStores.map(async ({ name, image }) => {
      const why = await containerImageUnavailableReason(image);
      return why ? `${name}: ${why}` : undefined;
    }),
  )
).filter((why) => why !== undefined);
const reason = missing.length > 0 ? missing.join("; ") : undefined;
if (reason) console.warn(`production-stack e2e suite skipped: ${reason}`);

describe.skipIf(reason !== undefined)(
  `services on KurrentDB, MongoDB and MinIO${reason ? ` (skipped: ${reason})` : ""}`,
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
