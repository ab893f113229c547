import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startNatsServer } from "@cheese/testing";
import { expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./fixtures/slow-start.ts", import.meta.url));
const busOnly = fileURLToPath(new URL("./fixtures/bus-only.ts", import.meta.url));

it("stops a process whose parent went away while it was still starting", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", fixture], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  try {
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await expect.poll(() => stdout, { timeout: 15_000 }).toContain("starting");
    child.disconnect(); // as the launcher's IPC channel closes when it is SIGKILLed
    await expect.poll(() => child.exitCode, { timeout: 15_000 }).toBe(0);
    expect(await exited).toBe(0);
    expect(stdout).toContain("stopped");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
});

/**
 * Runs the bus-only fixture with `env` until it exits or says it connected (then stops it):
 * its exit code (null while connected) and everything it wrote.
 */
async function busOnlyRun(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", busOnly], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  try {
    const connected = expect
      .poll(() => output, { timeout: 20_000 })
      .toContain("connected")
      .then(() => null);
    connected.catch(() => {}); // once it has exited, its poll's late failure is of no interest
    const code = await Promise.race([exited, connected]);
    return { code, output };
  } finally {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  }
}

it("exits 78 naming NATS_REPLICAS when it asks three replicas of a NATS server outside any cluster", async () => {
  const server = await startNatsServer();
  try {
    const { code, output } = await busOnlyRun({ NATS_URL: server.url, NATS_REPLICAS: "3" });
    expect(code).toBe(78);
    expect(output).toMatch(/NATS_REPLICAS=3 is refused: .*not part of a cluster/);
  } finally {
    await server.stop();
  }
}, 30_000);

it("connects as the identity NATS_CREDENTIALS holds for it, and without it exits 78 naming it", async () => {
  const server = await startNatsServer({ identity: "bus-only" });
  const dir = server.credentialsDir!;
  const seed = readFileSync(join(dir, "bus-only.nk"), "utf8").trim();
  try {
    const withCredentials = await busOnlyRun({ NATS_URL: server.url, NATS_CREDENTIALS: dir });
    expect(withCredentials).toMatchObject({ code: null, output: expect.stringContaining("connected") });

    const without = await busOnlyRun({ NATS_URL: server.url });
    expect(without.code).toBe(78);
    expect(without.output).toMatch(/NATS refused the connection's credentials.*NATS_CREDENTIALS is unset/);

    const missing = await busOnlyRun({ NATS_URL: server.url, NATS_CREDENTIALS: `${dir}.gone` });
    expect(missing.code).toBe(78);
    expect(missing.output).toMatch(
      /NATS_CREDENTIALS: cannot read .*credentials\.gone\/bus-only\.nk \(ENOENT\)/,
    );
    for (const run of [withCredentials, without, missing]) expect(run.output).not.toContain(seed);
  } finally {
    await server.stop();
  }
}, 60_000);
