import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { outputOf } from "@cheese/testing";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * Runs a shell script in the repository, in its own process group (so what it leaves running can
 * be stopped, and a Ctrl-C reaches all of it): with `stdin: "pipe"`, lines are typed into it.
 */
export function shell(
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
  const output = outputOf(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { output, exited, child };
}
