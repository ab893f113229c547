import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * True while a process with this id runs: it exists (signal 0 checks without sending anything)
 * and has not exited. An exited child whose parent was killed stays a zombie until init reaps
 * it, which may take a while (or never, under a container's init that does not reap): signal 0
 * still finds it, so on Linux its state in /proc decides.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: the state follows the last ")".
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    // No /proc (not Linux), or it exited between the two checks.
    return process.platform !== "linux";
  }
}

/** What `child` wrote to stdout and stderr, as it comes: the function answers what came so far. */
export function outputOf(child: ChildProcess): () => string {
  let output = "";
  const add = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", add);
  child.stderr?.on("data", add);
  return () => output;
}
