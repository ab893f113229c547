import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { containerImageUnavailableReason, outputOf } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin } from "../support/credentials.ts";
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
/** What `pnpm rebuild` runs once built. */
const rebuildCli = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "apps",
  "launcher",
  "dist",
  "rebuild-cli.js",
);

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

    it("reads a cheese as of a moment before its rename, folded from KurrentDB", async () => {
      const auth = await operatorHeaders(system);
      const created = await fetch(`${system.baseUrl}/cheeses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth.bearer },
        body: JSON.stringify({ name: "Beaufort", category: { name: "Hard" }, pricePerKg: 38 }),
      });
      const cheese = await json(created);
      const history = async () =>
        (await json(await fetch(`${system.baseUrl}/cheeses/${cheese.id}/history`, { headers: auth.apiKey })))
          .items as { at: string }[];
      const [added] = await history();
      await expect.poll(() => Date.now()).toBeGreaterThan(Date.parse(added!.at));
      const renamed = await fetch(`${system.baseUrl}/cheeses/${cheese.id}?name=Beaufort%20d%27alpage`, {
        method: "POST",
        headers: auth.bearer,
      });
      expect(renamed.status).toBe(200);
      const [, rename] = await history();
      const asOf = new Date(Date.parse(rename!.at) - 1).toISOString();
      const then = await fetch(`${system.baseUrl}/cheeses/${cheese.id}?asOf=${encodeURIComponent(asOf)}`, {
        headers: auth.apiKey,
      });
      expect(then.status).toBe(200);
      expect((await json(then)).name).toBe("Beaufort");
      expect(then.headers.get("x-cheese-as-of")).toBe(added!.at);
    });

    it("exports a customer's account and orders from KurrentDB and MongoDB, and 404 once erased", async () => {
      const auth = await operatorHeaders(system);
      const alice = await registerAndLogin(system);
      const exported = await fetch(`${system.baseUrl}/customer/${alice.username}/export`, {
        headers: alice.bearer,
      });
      expect(exported.status).toBe(200);
      expect(await json(exported)).toMatchObject({ customer: { id: alice.id }, orders: [] });
      const erased = await fetch(`${system.baseUrl}/customer/${alice.username}`, {
        method: "DELETE",
        headers: { "content-type": "application/json", ...alice.bearer },
        body: JSON.stringify({ currentPassword: alice.password }),
      });
      expect(erased.status).toBe(204);
      const gone = await fetch(`${system.baseUrl}/customer/${alice.username}/export`, {
        headers: auth.apiKey,
      });
      expect(gone.status).toBe(404);
    });
    it("rebuilds the cheeses read model in MongoDB beside the live one while every read answers", async () => {
      const auth = await operatorHeaders(system);
      const ids: number[] = [];
      for (const name of ["Comté", "Salers", "Cantal", "Morbier"]) {
        const created = await fetch(`${system.baseUrl}/cheeses`, {
          method: "POST",
          headers: { "content-type": "application/json", ...auth.bearer },
          body: JSON.stringify({ name, category: { name: "Hard" }, pricePerKg: 30 }),
        });
        expect(created.status).toBe(201);
        ids.push((await json(created)).id);
      }
      const child = spawn(process.execPath, [rebuildCli, "catalogue", "cheeses"], {
        env: { ...process.env, NATS_URL: "", DATA_DIR: system.dataDir },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const output = outputOf(child);
      let finished = false;
      const exited = new Promise<number | null>((resolve) =>
        child.once("close", (code) => {
          finished = true;
          resolve(code);
        }),
      );
      const statuses = new Set<number>();
      for (let round = 0; !finished; round++) {
        const read = await fetch(`${system.baseUrl}/cheeses/${ids[round % ids.length]}`, {
          headers: auth.apiKey,
        });
        await read.arrayBuffer();
        statuses.add(read.status);
        const ready = await fetch(`${system.rootUrl}/readyz`);
        await ready.arrayBuffer();
        statuses.add(ready.status);
      }
      expect(await exited, output()).toBe(0);
      expect([...statuses]).toEqual([200]);
      for (const id of ids) {
        const after = await fetch(`${system.baseUrl}/cheeses/${id}`, { headers: auth.apiKey });
        expect(after.status).toBe(200);
      }
    });
  },
);
