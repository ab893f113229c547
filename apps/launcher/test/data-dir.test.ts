import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@cheese/service-kit/launch";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it } from "vitest";
import { assertDataDirFree, DATA_DIR_LOCK, type Lock, takeDataDir } from "../src/data-dir.ts";

const held: Lock[] = [];
const dirs: { remove(): void }[] = [];
afterEach(() => {
  for (const lock of held.splice(0)) lock.release();
  for (const dir of dirs.splice(0)) dir.remove();
});

function newDir(): string {
  const dir = tempDir("data-dir-lock");
  dirs.push(dir);
  return dir.path;
}

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", "0"]).pid as number;
}

function writeLock(dataDir: string, holder: Record<string, unknown>): void {
  const lock = {
    startTime: null,
    host: hostname(),
    command: "pnpm start",
    since: "2026-01-01T00:00:00Z",
    nonce: "x",
  };
  writeFileSync(join(dataDir, DATA_DIR_LOCK), JSON.stringify({ ...lock, ...holder }));
}

function refusal(take: () => unknown): string {
  try {
    take();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("taken");
}

describe("the DATA_DIR lock", () => {
  it("names its holder, refuses a second taker naming DATA_DIR and the pid, and is free again once released", () => {
    const dataDir = newDir();
    const lock = takeDataDir(dataDir, "pnpm start");
    held.push(lock);
    expect(JSON.parse(readFileSync(join(dataDir, DATA_DIR_LOCK), "utf8"))).toMatchObject({
      pid: process.pid,
      command: "pnpm start",
    });
    expect(refusal(() => takeDataDir(dataDir, "pnpm restore"))).toContain(
      `DATA_DIR ${dataDir} is in use by process ${process.pid} (pnpm start`,
    );
    expect(refusal(() => assertDataDirFree(dataDir))).toContain(`in use by process ${process.pid}`);
    lock.release();
    expect(() => assertDataDirFree(dataDir)).not.toThrow();
    held.push(takeDataDir(dataDir, "pnpm start"));
    // No draft or moved-away file is left beside it.
    expect(readdirSync(dataDir)).toEqual([DATA_DIR_LOCK]);
  });

  it("takes over the lock of a process that is gone, and of a pid reused by another process", () => {
    const dataDir = newDir();
    const dead = deadPid();
    writeLock(dataDir, { pid: dead });
    const lock = takeDataDir(dataDir, "pnpm start");
    held.push(lock);
    expect(lock.previous?.pid).toBe(dead);
    lock.release();

    // This process's pid, written by a process that started at another time.
    writeLock(dataDir, { pid: process.pid, startTime: 1 });
    held.push(takeDataDir(dataDir, "pnpm start"));
    expect(readdirSync(dataDir)).toEqual([DATA_DIR_LOCK]);
  });

  it("never takes over a lock held on another host, which it cannot ask", () => {
    const dataDir = newDir();
    writeLock(dataDir, { pid: deadPid(), host: "elsewhere" });
    expect(refusal(() => takeDataDir(dataDir, "pnpm start"))).toMatch(/in use by process \d+ on elsewhere/);
  });
});
