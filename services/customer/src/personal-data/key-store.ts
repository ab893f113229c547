import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { publishFile, readOrCreateFile } from "@cheese/service-kit";

/**
 * Where per-customer encryption keys live. Unlike the event store it must really forget: once
 * `destroy` returns, the key cannot be read back, and so neither can anything encrypted with it.
 */
export interface KeyStore {
  /** A new random 256-bit key for the customer; refuses to replace an existing one. */
  create(customerId: number): Promise<Buffer>;
  get(customerId: number): Promise<Buffer | undefined>;
  /** Destroys the key for good; a missing key is fine (erasure is idempotent). */
  destroy(customerId: number): Promise<void>;
  /** A secret created once and kept (the pepper of email hashes). */
  secret(name: string): Promise<Buffer>;
}

const KEY_BYTES = 32;

/**
 * The embedded key store: one small file per key under DATA_DIR/customer/keys, shared by the
 * replicas on one host. Files are published with `publishFile` (never half-written, never replaced)
 * and destroyed by overwriting their bytes with random ones and syncing before unlinking, so the
 * key does not linger in the file's old blocks. Production would keep keys in a KMS or a
 * MongoDB collection of its own (see docs/identity.md).
 */
export function createFileKeyStore(dir: string): KeyStore {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyFile = (customerId: number) => join(dir, `customer-${customerId}.key`);

  return {
    async create(customerId) {
      const key = randomBytes(KEY_BYTES);
      publishFile(keyFile(customerId), key);
      return key;
    },
    async get(customerId) {
      try {
        return readFileSync(keyFile(customerId));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
    },
    async destroy(customerId) {
      shred(keyFile(customerId));
    },
    async secret(name) {
      // Created once; another replica racing to create it loses and reads the winner's.
      return readOrCreateFile(join(dir, `${name}.secret`), () => randomBytes(KEY_BYTES));
    },
  };
}

function shred(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, "r+");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    writeSync(fd, randomBytes(KEY_BYTES), 0, KEY_BYTES, 0);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  rmSync(file, { force: true });
}
