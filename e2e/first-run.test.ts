import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { freePort, tempDir } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shell } from "./support/shell.ts";
import { json, launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

/** Nothing configured: the variables present but empty, as on a fresh machine. */
const noCredentials = { API_KEYS: "", OAUTH_CLIENTS: "" };

/** The launcher's banner, from its JSON log lines (stdout is not a terminal here). */
function banner(output: string): string | undefined {
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) continue;
    const entry = JSON.parse(line) as { service?: string; msg?: string };
    if (entry.service === "launcher" && entry.msg?.startsWith("development credentials")) return entry.msg;
  }
  return undefined;
}

describe.skipIf(launcherOnly("the first run's development credentials"))("a first run", () => {
  let system: RunningSystem;
  const data = tempDir("first-run");

  beforeAll(async () => {
    system = await startSystem({
      dataDir: data.path,
      env: { ...noCredentials, NODE_ENV: "development", WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    });
  });
  afterAll(async () => {
    await system?.stop();
    data.remove();
  });

  it("makes a development operator key and OAuth client once, and prints them, the pages and a curl that creates a cheese", async () => {
    await expect.poll(() => banner(system.output())).toBeDefined();
    const text = banner(system.output())!;
    const file = join(data.path, "dev-credentials.json");
    const kept = JSON.parse(readFileSync(file, "utf8"));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(text).toContain("made now");
    expect(text).toContain(kept.operatorKey);
    expect(text).toContain(`${kept.oauthClient.id} / ${kept.oauthClient.secret}`);
    expect(text).toContain(`${system.rootUrl}/docs`);
    expect(text).toContain(`${system.rootUrl}/console`);

    // The two printed commands, run as printed, create a cheese.
    const commands = text.split("create a cheese:\n")[1]!;
    const run = shell(commands);
    expect(await run.exited).toBe(0);
    const created = JSON.parse(run.output());
    expect(created).toMatchObject({ id: expect.any(Number), name: "Comté" });
    // The operator key works where operator keys do (the next start finds this registration).
    const hook = await fetch(`${system.baseUrl}/webhooks`, {
      method: "POST",
      headers: { "x-api-key": kept.operatorKey, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:9/first-run", events: ["order.placed"] }),
    });
    expect(hook.status).toBe(201);
  });

  it("reuses the same credentials on the next start", async () => {
    const before = JSON.parse(readFileSync(join(data.path, "dev-credentials.json"), "utf8"));
    await system.stop();
    system = await startSystem({ dataDir: data.path, env: { ...noCredentials, NODE_ENV: "development" } });
    await expect.poll(() => banner(system.output())).toContain("made at the first start");
    expect(banner(system.output())).toContain(before.operatorKey);
    const hooks = await fetch(`${system.baseUrl}/webhooks`, { headers: { "x-api-key": before.operatorKey } });
    expect(hooks.status).toBe(200);
    expect((await json(hooks)).items).toHaveLength(1);
  });
});

describe.skipIf(launcherOnly("refusing a production start without credentials"))("a production start", () => {
  it("without credentials refuses to start: exit 78, a message naming API_KEYS, no credentials made", async () => {
    const data = tempDir("production");
    try {
      const run = shell(`exec "${process.execPath}" apps/launcher/dist/cli.js`, "ignore", {
        ...noCredentials,
        NODE_ENV: "production",
        NATS_URL: "",
        LOG_LEVEL: "warn",
        GATEWAY_PORT: String(await freePort()),
        DATA_DIR: data.path,
      });
      const code = await run.exited;
      const output = run.output();
      expect(code).toBe(78);
      expect(output).toContain("API_KEYS: NODE_ENV=production and no credentials");
      expect(() => statSync(join(data.path, "dev-credentials.json"))).toThrow();
    } finally {
      data.remove();
    }
  });
});
