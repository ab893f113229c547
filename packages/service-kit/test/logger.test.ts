import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./fixtures/quiet-logger.ts", import.meta.url));

it("writes a process's last lines while it runs, though they do not fill a write", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", fixture], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    await expect
      .poll(
        () =>
          stdout
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line).msg),
        { timeout: 15_000 },
      )
      .toEqual(["first line", "second line"]);
    expect(child.exitCode).toBeNull();
  } finally {
    child.kill("SIGKILL");
  }
});
