import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * Global setup: the suites start the built system (what `pnpm start` and the image run), so
 * whatever is out of date is built first, by the same script `pnpm start` calls.
 */
export function setup(): void {
  execFileSync(process.execPath, [join(repoRoot, "scripts", "build.mjs")], { stdio: "inherit" });
}
