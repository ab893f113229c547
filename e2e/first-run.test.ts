import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, tempDir } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
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

/** Runs a shell script in its own process group (so what it leaves running can be stopped). */
function shell(
  script: string,
  stdin: "ignore" | "pipe" = "ignore",
  env: Record<string, string> = {},
): { output(): string; exited: Promise<number | null>; child: ChildProcess } {
  const child = spawn("bash", ["-c", script], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    detached: true,
    stdio: [stdin, "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { output: () => output, exited, child };
}

describe.skipIf(launcherOnly("the first run's development credentials"))("a first run", () => {
  let system: RunningSystem;
  const data = tempDir("first-run");
  const scripts: ChildProcess[] = [];

  beforeAll(async () => {
    system = await startSystem({
      dataDir: data.path,
      env: { ...noCredentials, NODE_ENV: "development", WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    });
  });
  afterAll(async () => {
    for (const script of scripts) {
      try {
        process.kill(-script.pid!, "SIGTERM");
      } catch {
        // already gone
      }
    }
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
    // The operator key works where operator keys do.
    const hooks = await fetch(`${system.baseUrl}/webhooks`, { headers: { "x-api-key": kept.operatorKey } });
    expect(hooks.status).toBe(200);
  });

  it("runs the README's five-minute tour as written: token, cheese, webhook, order, the webhooks arrive signed", async () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const tour = readme.split("## A five-minute tour")[1]!.split("\n## ")[0]!;
    const blocks = [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks[0]).toContain("pnpm start"); // started above, with the same variable
    const receiverPort = await freePort();
    const steps = blocks.slice(1).map((block) =>
      block
        .replaceAll("127.0.0.1:8080", system.rootUrl.replace("http://", ""))
        .replaceAll(".data/dev-credentials.json", join(data.path, "dev-credentials.json"))
        .replaceAll(/\b4000\b/g, String(receiverPort)),
    );
    // One shell, fed a block at a time as a reader would type them, each once the one before
    // has finished (and the receiver, started in the background, is listening).
    const run = shell("set -euo pipefail; exec bash -s", "pipe");
    scripts.push(run.child);
    for (const [index, step] of steps.entries()) {
      run.child.stdin!.write(`${step}\necho "step ${index} done"\n`);
      await expect.poll(() => run.output()).toContain(`step ${index} done`);
      if (step.includes("receive-webhooks.mjs")) {
        await expect.poll(() => run.output()).toContain("receiving webhooks on");
      }
    }
    // The cheese read back, the order placed, then the receiver's lines as the webhooks arrive.
    expect(run.output()).toMatch(/"name":"Brie de Meaux"/);
    expect(run.output()).toMatch(/"status":"placed"/);
    await expect.poll(() => run.output()).toMatch(/received order\.placed evt_\w+ signature ok/);
    await expect.poll(() => run.output()).toMatch(/received order\.confirmed evt_\w+ signature ok/);
    expect(run.output()).not.toContain("BAD SIGNATURE");

    // Open the console: the operator key signs in, and the registration is there.
    const operatorKey = JSON.parse(readFileSync(join(data.path, "dev-credentials.json"), "utf8")).operatorKey;
    const form = await fetch(`${system.rootUrl}/console/sign-in`);
    const formCookie = form.headers.getSetCookie()[0]!.split(";")[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const signedIn = await fetch(`${system.rootUrl}/console/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: formCookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf, key: operatorKey }),
    });
    expect(signedIn.headers.get("location")).toBe(`${system.rootUrl}/console/webhooks`);
    const session = signedIn.headers.getSetCookie().find((c) => c.startsWith("console_session="))!;
    const page = await fetch(`${system.rootUrl}/console/webhooks`, {
      headers: { cookie: session.split(";")[0]! },
    });
    expect(await page.text()).toContain(`http://127.0.0.1:${receiverPort}/hooks`);
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
