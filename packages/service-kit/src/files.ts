import { randomUUID } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";

/**
 * Writes `bytes` to `file` only if it does not exist yet: a synced temporary file is linked into
 * place with link(2), so the file is never seen half-written and of several replicas racing to
 * create it exactly one wins. Throws EEXIST when the name is taken.
 */
export function publishFile(file: string, bytes: Buffer | string): void {
  mkdirSync(dirname(file), { recursive: true });
  const temp = `${file}.${randomUUID()}.tmp`;
  const fd = openSync(temp, "wx", 0o600);
  try {
    writeSync(fd, typeof bytes === "string" ? Buffer.from(bytes) : bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, file);
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * Replaces `file` whole: the bytes go to a temporary file beside it, which is renamed over it, so
 * a reader sees the previous contents or the new ones, never a file half-written (a status file
 * other processes read while it changes).
 */
export function replaceFile(file: string, bytes: Buffer | string): void {
  mkdirSync(dirname(file), { recursive: true });
  const temp = `${file}.${randomUUID()}.tmp`;
  try {
    writeFileSync(temp, bytes);
    renameSync(temp, file);
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * The contents of a file created once and shared by every replica on one host (a key, a
 * secret): read it, or create it with `make()` when absent; a replica that loses the race to
 * create it reads the winner's.
 */
export function readOrCreateFile(file: string, make: () => Buffer | string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  try {
    publishFile(file, make());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readFileSync(file);
}
