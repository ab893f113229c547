import { resolve } from "node:path";
import { writeDeploymentIdentities } from "./nats-identities.ts";

/**
 * `pnpm nats:identities <dir>`: makes the NATS identities of a deployment in `<dir>` (docs/
 * operations.md, "NATS identities"): each identity's seed in `<identity>.nk` (mode 0600, one
 * already there is kept) and `public-keys.env`, what the nats-servers' authorization reads.
 * Prints where they are, never a seed.
 */
const [dir] = process.argv.slice(2);
if (!dir) {
  console.error("usage: pnpm nats:identities <dir>");
  process.exit(64);
}
const publicKeys = writeDeploymentIdentities(resolve(dir));
console.log(`NATS identities in ${resolve(dir)} (<identity>.nk, mode 0600); public keys in ${publicKeys}`);
