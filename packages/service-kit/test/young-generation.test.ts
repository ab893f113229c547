import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const fixture = fileURLToPath(new URL("./fixtures/young-generation.ts", import.meta.url));
const MB = 1024 * 1024;

it("gives a young generation grown by a burst back once the process is idle", async () => {
  const child = spawn(
    process.execPath,
    ["--max-semi-space-size=16", "--expose-gc", "--import", "tsx", fixture],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const sizes: number[] = [];
  let pending = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const size = /^young (\d+)$/.exec(line)?.[1];
      if (size) sizes.push(Number(size));
    }
  });
  try {
    await expect.poll(() => sizes.length, { timeout: 15_000 }).toBeGreaterThan(0);
    expect(sizes[0]).toBeGreaterThan(8 * MB); // the burst grew it
    await expect.poll(() => sizes.at(-1), { timeout: 10_000 }).toBeLessThanOrEqual(MB);
  } finally {
    child.kill("SIGKILL");
  }
}, 30_000);
