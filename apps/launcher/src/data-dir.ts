import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, parse, resolve, sep } from "node:path";
import { ConfigError } from "@cheese/service-kit/launch";

/**
 * One system per DATA_DIR, and the one mechanism for every "one at a time" of the launcher's
 * (`pnpm start`, `pnpm cluster up`, the test hosts of `LAUNCH_HOSTS=netns`): a lock file made
 * with O_EXCL that names its holder (pid, the process's start time, host, command), taken over
 * when that process is gone. Why not a lock library: docs/operations.md, "One system per
 * DATA_DIR".
 */

/** The DATA_DIR lock, at the top of DATA_DIR. */
export const DATA_DIR_LOCK = "lock.json";

/** Who holds a lock, as its file says. */
export interface LockHolder {
  pid: number;
  /** The process's start time (Linux: clock ticks since boot, /proc/<pid>/stat), so a reused pid is not taken for it. */
  startTime: number | null;
  host: string;
  /** What it runs: `pnpm start`, `pnpm restore`. */
  command: string;
  /** When it took the lock (ISO time). */
  since: string;
  /** Anything the holder adds (the test hosts' lock: the DATA_DIR of the cluster that made them). */
  [detail: string]: unknown;
}

export interface Lock {
  file: string;
  holder: LockHolder;
  /** The holder whose lock this one took over (it was gone), if any. */
  previous?: LockHolder;
  /** Removes the lock file if it is still this process's. Idempotent; also run at exit. */
  release(): void;
}

/**
 * Makes DATA_DIR if need be and takes its lock for this process (released at exit), or refuses
 * with a ConfigError (exit 78) naming DATA_DIR: when it cannot be made or written, and when a
 * live process holds it (naming that process). Synchronous and bounded: it never waits.
 */
export function takeDataDir(dataDir: string, command: string): Lock {
  const dir = resolve(dataDir);
  makeDirectory(dir);
  try {
    return takeLock(join(dir, DATA_DIR_LOCK), command);
  } catch (error) {
    const holder = (error as { holder?: LockHolder }).holder;
    if (holder) throw inUse(dir, holder);
    throw new ConfigError(`DATA_DIR ${dir} cannot be written: ${reason(error)}`);
  }
}

/**
 * Refuses (ConfigError, exit 78) when a live process holds DATA_DIR, as `takeDataDir` would,
 * without taking it: `pnpm cluster up` asks before it starts the launcher in the background.
 */
export function assertDataDirFree(dataDir: string): void {
  const dir = resolve(dataDir);
  const holder = lockHolder(join(dir, DATA_DIR_LOCK));
  if (holder) throw inUse(dir, holder);
}

/** How long a start that took over a dead launcher's DATA_DIR waits for what that launcher left running. */
const LEFTOVERS_TIMEOUT_MS = 15_000;

/**
 * After a takeover: the processes the dead launcher started (DATA_DIR/run/processes.json) stop by
 * themselves (a service when its IPC channel closes, within its 10 s shutdown deadline; nats-server
 * on its parent-death signal), but not at once. Waits until none is left, so no second
 * nats-server runs on the JetStream store beside the old one; refuses (exit 78, naming DATA_DIR
 * and the process) when one is still running after LEFTOVERS_TIMEOUT_MS. A pid counts only if
 * its process started before the file was last written (not a pid reused since).
 */
export async function previousProcessesGone(lock: Lock, dataDir: string): Promise<void> {
  if (!lock.previous) return;
  const listed = processesListed(join(resolve(dataDir), "run", "processes.json"));
  const deadline = Date.now() + LEFTOVERS_TIMEOUT_MS;
  for (;;) {
    const left = listed.filter(({ pid, before }) => startedBefore(pid, before));
    if (left.length === 0) return;
    if (Date.now() > deadline) {
      const [first] = left;
      throw new ConfigError(
        `DATA_DIR ${resolve(dataDir)} is still in use by process ${first?.pid} (started by launcher ${lock.previous.pid}, which is gone): stop it`,
      );
    }
    await new Promise((next) => setTimeout(next, 100));
  }
}

function processesListed(file: string): { pid: number; before: number }[] {
  try {
    const before = statSync(file).mtimeMs;
    const record = JSON.parse(readFileSync(file, "utf8")) as {
      instances?: { pid: number | null }[];
      nats?: { pid: number | null }[];
    };
    return [...(record.instances ?? []), ...(record.nats ?? [])]
      .map(({ pid }) => pid)
      .filter((pid): pid is number => typeof pid === "number")
      .map((pid) => ({ pid, before }));
  } catch {
    return [];
  }
}

/** Whether `pid` runs (not a zombie) and started before `timeMs` (Linux; elsewhere: whether it runs). */
function startedBefore(pid: number, timeMs: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = procStat(pid);
  if (!stat) return true;
  if (stat.exited) return false;
  return bootTimeMs() + stat.startTime * (1000 / CLOCK_TICKS_PER_SECOND) <= timeMs + 1000;
}

/** USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

function bootTimeMs(): number {
  const line = readFileSync("/proc/stat", "utf8")
    .split("\n")
    .find((l) => l.startsWith("btime "));
  return Number(line?.split(" ")[1]) * 1000;
}

function inUse(dir: string, holder: LockHolder): ConfigError {
  const where = holder.host === hostname() ? "" : ` on ${holder.host}`;
  return new ConfigError(
    `DATA_DIR ${dir} is in use by process ${holder.pid}${where} (${holder.command}, since ${holder.since}): one system per DATA_DIR; stop that one or choose another DATA_DIR`,
  );
}

/** The live holder of the lock `file`, if any. */
export function lockHolder(file: string): LockHolder | undefined {
  const holder = readHolder(file);
  return holder && holderAlive(holder) ? holder : undefined;
}

/**
 * Takes the lock `file` for this process: the file is made whole under another name, then linked
 * to `file` (link fails when `file` exists, so the lock appears atomically and never half
 * written). Held by a live process: throws an error carrying `holder`. Held by a process that is
 * gone (killed, crashed): taken over (`takeOver`).
 */
export function takeLock(file: string, command: string, details: Record<string, unknown> = {}): Lock {
  const nonce = randomBytes(8).toString("hex");
  const holder: LockHolder = {
    pid: process.pid,
    startTime: startTimeOf(process.pid),
    host: hostname(),
    command,
    since: new Date().toISOString(),
    ...details,
    nonce,
  };
  const draft = `${file}.${process.pid}.${nonce}`;
  let previous: LockHolder | undefined;
  writeFileSync(draft, `${JSON.stringify(holder)}\n`, { flag: "wx", mode: 0o644 });
  try {
    // Bounded: each turn either takes the lock, refuses, or removes a dead holder's file.
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        linkSync(draft, file);
        const lock: Lock = {
          file,
          holder,
          ...(previous ? { previous } : {}),
          release: () => releaseLock(file, nonce),
        };
        process.once("exit", lock.release);
        return lock;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const current = readHolder(file);
      if (current && holderAlive(current)) throw Object.assign(new Error("lock held"), { holder: current });
      takeOver(file, current);
      previous = current;
    }
    throw new Error(`${file} keeps changing hands`);
  } finally {
    unlinkQuietly(draft);
  }
}

/**
 * Removes the lock file of a holder that is gone. It is first renamed to a name of this process's
 * own (atomic: of two processes taking over at once, one moves it), then read again: when it is
 * not the dead holder's after all (another start took it over in between), it is linked back.
 */
function takeOver(file: string, dead: LockHolder | undefined): void {
  const moved = `${file}.stale.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    renameSync(file, moved);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return; // someone else moved it
    throw error;
  }
  const now = readHolder(moved);
  if (now && dead && now.nonce !== dead.nonce && holderAlive(now)) {
    try {
      linkSync(moved, file);
    } catch {
      // a third start got in: it holds the lock now, and the next turn says so
    }
  }
  unlinkQuietly(moved);
}

function releaseLock(file: string, nonce: string): void {
  if (readHolder(file)?.nonce === nonce) unlinkQuietly(file);
}

function readHolder(file: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(file, "utf8")) as LockHolder;
    return typeof holder.pid === "number" ? holder : undefined;
  } catch {
    // absent, or not a lock this code wrote (nothing holds it)
    return undefined;
  }
}

/**
 * Whether the process that wrote a lock still runs: same host (another host's process cannot be
 * asked, so it counts as alive), the pid alive and not a zombie, and (where /proc tells) the same
 * start time, so a pid reused by another process does not hold the lock.
 */
function holderAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = procStat(holder.pid);
  if (!stat) return true;
  return !stat.exited && (holder.startTime === null || stat.startTime === holder.startTime);
}

function startTimeOf(pid: number): number | null {
  return procStat(pid)?.startTime ?? null;
}

/**
 * A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat) and whether it
 * has exited (a zombie not yet reaped); undefined without /proc.
 */
function procStat(pid: number): { startTime: number; exited: boolean } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { startTime: Number(fields[19]), exited: fields[0] === "Z" || fields[0] === "X" };
}

/**
 * Makes `dir` and its missing parents, one level at a time. Not `mkdirSync(dir, { recursive:
 * true })`: on a path under /proc Node's recursive mkdir loops forever (ENOENT from a parent that
 * exists), which hung `pnpm start` at full CPU.
 */
function makeDirectory(dir: string): void {
  const { root } = parse(dir);
  const parts = dir.slice(root.length).split(sep).filter(Boolean);
  let path = root;
  for (const part of parts) {
    path = join(path, part);
    try {
      mkdirSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EEXIST" && isDirectory(path)) continue;
      const what = code === "EEXIST" ? `${path} is not a directory` : reason(error);
      throw new ConfigError(`DATA_DIR ${dir} cannot be created: ${what}`);
    }
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function reason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code ? `${code} (${message.replace(/^[A-Z]+: /, "").replace(/, \w+ '.*'$/, "")})` : message;
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}
