import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "@cheese/testing";
import { afterAll, describe, expect, it } from "vitest";
import { testListenPort } from "./support/ports.ts";
import { shell } from "./support/shell.ts";
import { launcherOnly } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The README's tour: its `sh` blocks, in order. */
function tourBlocks(): string[] {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const tour = readme.split("## A five-minute tour")[1]!.split("\n## ")[0]!;
  return [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * The README's five-minute tour, its commands run as written in two shells as a reader types
 * them, on a gateway port, data directory and receiver port other than the defaults: the reader
 * sets the three variables once per terminal, and nothing else names a port or a directory.
 */
describe.skipIf(launcherOnly("the README's tour (pnpm start)"))("the README's five-minute tour", () => {
  const data = tempDir("tour data");
  const terminals: ReturnType<typeof shell>[] = [];
  afterAll(async () => {
    for (const terminal of terminals) {
      if (terminal.child.exitCode !== null || terminal.child.signalCode !== null) continue;
      const exited = terminal.exited;
      process.kill(-terminal.child.pid!, "SIGTERM");
      await exited;
    }
    data.remove();
  });

  it("runs as written on another port and data directory: token, cheese, webhook, order, signed webhooks; Ctrl-C exits 0", async () => {
    const [settings, start, ...steps] = tourBlocks();
    // The one line a reader changes; the test types its own values instead.
    expect(settings).toBe("export GATEWAY_PORT=8080 DATA_DIR=.data HOOKS_PORT=4000\n");
    const [gatewayPort, hooksPort] = [await testListenPort(), await testListenPort()];
    const ours = `export GATEWAY_PORT=${gatewayPort} DATA_DIR='${data.path}' HOOKS_PORT=${hooksPort}\n`;
    for (const block of [start!, ...steps]) expect(block).not.toMatch(/8080|4000|\.data\b/);

    // A fresh machine's variables: no credentials, not production, no NATS of its own.
    const fresh = { API_KEYS: "", OAUTH_CLIENTS: "", NODE_ENV: "development", NATS_URL: "" };
    const system = shell(`${ours}${start}`, "ignore", fresh);
    terminals.push(system);
    const rootUrl = `http://127.0.0.1:${gatewayPort}`;
    await expect.poll(() => system.output(), { timeout: 60_000 }).toContain(`ready on ${rootUrl}`);

    // The second terminal, fed a block at a time, each once the one before has finished (and the
    // receiver, started in the background, is listening).
    const reader = shell("set -euo pipefail; exec bash -s", "pipe", fresh);
    terminals.push(reader);
    reader.child.stdin!.write(ours);
    for (const [index, step] of steps.entries()) {
      reader.child.stdin!.write(`${step}\necho "step ${index} done"\n`);
      await expect.poll(() => reader.output()).toContain(`step ${index} done`);
      if (step.includes("receive-webhooks.mjs")) {
        await expect.poll(() => reader.output()).toContain("receiving webhooks on");
      }
    }
    expect(reader.output()).toMatch(/"name":"Brie de Meaux"/);
    expect(reader.output()).toMatch(/"status":"placed"/);
    await expect.poll(() => reader.output()).toMatch(/received order\.placed evt_\w+ signature ok/);
    await expect.poll(() => reader.output()).toMatch(/received order\.confirmed evt_\w+ signature ok/);
    expect(reader.output()).not.toContain("BAD SIGNATURE");

    // The console address the README has the reader echo.
    reader.child.stdin!.write('echo "console at $CHEESE/console"\n');
    await expect.poll(() => reader.output()).toContain(`console at ${rootUrl}/console`);
    expect((await fetch(`${rootUrl}/console/sign-in`)).status).toBe(200);

    // `kill %1` stops the receiver; the reader's shell ends cleanly.
    reader.child.stdin!.end("kill %1\nwait || true\nexit 0\n");
    expect(await reader.exited).toBe(0);
    // The credentials the tour read are in the data directory it chose, and nowhere else.
    expect(JSON.parse(readFileSync(join(data.path, "dev-credentials.json"), "utf8")).operatorKey).toMatch(
      /^dev-operator-/,
    );

    // Ctrl-C: the terminal's whole foreground group gets SIGINT; pnpm reports no failure.
    process.kill(-system.child.pid!, "SIGINT");
    expect(await system.exited).toBe(0);
    expect(system.output()).not.toMatch(/ELIFECYCLE|Command failed/);
  });
});
