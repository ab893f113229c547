import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  MONITOR_IDENTITY,
  type NatsIdentity,
  natsIdentities,
  publicKeyVariable,
  seedFileName,
} from "@cheese/messaging/permissions";
import { ConfigError } from "@cheese/service-kit/launch";
import { createUser, fromSeed } from "nkeys.js";

/**
 * The NATS identities of `pnpm start`'s own nats-servers: an nkey per service and one for
 * operators (`monitor`), made once per DATA_DIR and kept in DATA_DIR/nats-identities like the
 * development credentials (a directory of mode 0700, each seed in `<identity>.nk`, mode 0600,
 * created exclusively so two starts at once agree). The services read their own seed from there
 * (NATS_CREDENTIALS names the directory); the server is given only the public keys.
 */
export const NATS_IDENTITIES_DIR = "nats-identities";

/** Makes the seeds missing in `dir` (never replacing one) and returns every identity's public key. */
export function ensureIdentities(dir: string): Record<NatsIdentity, string> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const keys = {} as Record<NatsIdentity, string>;
  for (const identity of natsIdentities) {
    const file = join(dir, seedFileName(identity));
    try {
      const seed = new TextDecoder().decode(createUser().getSeed());
      writeFileSync(file, `${seed}\n`, { flag: "wx", mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    keys[identity] = publicKeyOf(file);
  }
  return keys;
}

/** The identities of DATA_DIR: the directory the services are given, and the public keys. */
export function dataDirIdentities(dataDir: string): { dir: string; keys: Record<NatsIdentity, string> } {
  const dir = resolve(join(dataDir, NATS_IDENTITIES_DIR));
  return { dir, keys: ensureIdentities(dir) };
}

/** The seed file of the operators' identity (`monitor`) in DATA_DIR. */
export function monitorSeedFile(dataDir: string): string {
  return resolve(join(dataDir, NATS_IDENTITIES_DIR, seedFileName(MONITOR_IDENTITY)));
}

/** The public key of a user nkey seed (`SU…`); throws on anything else. */
export function publicKeyOfSeed(seed: string): string {
  return fromSeed(new TextEncoder().encode(seed.trim())).getPublicKey();
}

function publicKeyOf(file: string): string {
  try {
    return publicKeyOfSeed(readFileSync(file, "utf8"));
  } catch {
    throw new ConfigError(`${file} holds no nkey seed: delete it to make a new one`);
  }
}

/**
 * `pnpm nats:identities <dir>`: the identities for a deployment (docker compose, Kubernetes):
 * the seeds in `<dir>/<identity>.nk` (kept when present), and `<dir>/public-keys.env`, the
 * variables the nats-servers' `authorization.conf` reads each public key from.
 */
export function writeDeploymentIdentities(dir: string): string {
  const keys = ensureIdentities(dir);
  const env = natsIdentities.map((identity) => `${publicKeyVariable(identity)}=${keys[identity]}`);
  const file = join(dir, "public-keys.env");
  writeFileSync(file, `${env.join("\n")}\n`);
  return file;
}
