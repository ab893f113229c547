import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./fixtures/slow-start.ts", import.meta.url));

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
