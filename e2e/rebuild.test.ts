import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeCatalogueHistory } from "@cheese/service-testing/histories";
import { outputOf, tempDir } from "@cheese/testing";
import { afterAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
/** What `pnpm rebuild` runs once built. */
const tool = join(repoRoot, "apps", "launcher", "dist", "rebuild-cli.js");
const CHEESES = 20_000;

const data = tempDir("rebuild");
let system: RunningSystem | undefined;
afterAll(async () => {
  await system?.stop();
  data.remove();
});

/** Runs `pnpm rebuild <args>` (built) against the system on DATA_DIR. */
function rebuild(...args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [tool, ...args], {
    cwd: repoRoot,
    env: { ...process.env, NATS_URL: "", DATA_DIR: data.path },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = outputOf(child);
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, output: output() })));
}

describe.skipIf(launcherOnly("pnpm rebuild against the launcher's DATA_DIR"))("pnpm rebuild", () => {
  it("rebuilds a projection of the running system while every read and /readyz answers 200", async () => {
    // 100,000 catalogue events, so the rebuild lasts long enough to be read through.
    await writeCatalogueHistory(data.path, CHEESES, 5);
    system = await startSystem({ dataDir: data.path });
    const { bearer } = await operatorHeaders(system);

    let finished = false;
    const command = rebuild("catalogue", "cheeses").finally(() => {
      finished = true;
    });
    const answers: Record<string, number> = {};
    for (let round = 0; !finished; round++) {
      const id = 1 + ((round * 7919) % CHEESES);
      for (const url of [`${system.baseUrl}/cheeses/${id}`, `${system.rootUrl}/readyz`]) {
        const response = await fetch(url, { headers: bearer });
        await response.arrayBuffer();
        const key = `${url.endsWith("/readyz") ? "/readyz" : "GET /v2/cheeses/{id}"} ${response.status}`;
        answers[key] = (answers[key] ?? 0) + 1;
      }
    }
    const { code, output } = await command;
    expect(output).toMatch(/rebuilt catalogue cheeses: version \d+, generation 1, [\d,]+ events/);
    expect(code).toBe(0);
    expect(Object.keys(answers).sort()).toEqual(["/readyz 200", "GET /v2/cheeses/{id} 200"]);

    // After the switch: the rebuilt read model answers.
    const after = await fetch(`${system.baseUrl}/cheeses/7`, { headers: bearer });
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ id: 7, name: "Historic 7" });
  });

  it("names the projections a service has when asked for another; says so when no replica answers", async () => {
    expect(system, "the system of the test before").toBeDefined();
    const unknown = await rebuild("catalogue", "orders");
    expect(unknown.code).toBe(64);
    expect(unknown.output).toContain('catalogue has no projection "orders"');
    expect(unknown.output).toContain("cheeses");
    const nobody = await rebuild("gateway", "cheeses");
    expect(nobody.code).toBe(69);
    expect(nobody.output).toContain("no gateway replica answered");
    const usage = await rebuild("catalogue");
    expect(usage.code).toBe(64);
    expect(usage.output).toContain("usage: pnpm rebuild <service> <projection>");
  });
});
