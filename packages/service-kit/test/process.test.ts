import { spawn } from "node:child_process";
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

it("exits 78 naming NATS_REPLICAS when it asks three replicas of a NATS server outside any cluster", async () => {
  const server = await startNatsServer();
  const child = spawn(process.execPath, ["--import", "tsx", busOnly], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NATS_URL: server.url, NATS_REPLICAS: "3" },
  });
  try {
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    expect(code).toBe(78);
    expect(output).toMatch(/NATS_REPLICAS=3 is refused: .*not part of a cluster/);
    expect(output).not.toContain("connected");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    await server.stop();
  }
}, 30_000);
