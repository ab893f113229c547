import { generateKeyPairSync, randomUUID } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { calculateJwkThumbprint, importJWK, type JWK } from "jose";

export const SIGNING_ALG = "EdDSA";

export interface SigningKey {
  kid: string;
  privateKey: Awaited<ReturnType<typeof importJWK>>;
  publicJwk: JWK;
}

/**
 * The token signing key (Ed25519). Given as a private JWK in JWT_PRIVATE_KEY, or created once
 * under DATA_DIR and reused across restarts. Gateway replicas on one host race to create it;
 * the file is published with link(2), which fails for all but the first, so all share one key.
 */
export async function loadSigningKey(file: string, privateJwkJson?: string): Promise<SigningKey> {
  const privateJwk = privateJwkJson ? (JSON.parse(privateJwkJson) as JWK) : readOrCreate(file);
  const { d: _secret, ...publicJwk } = privateJwk;
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    privateKey: await importJWK({ ...privateJwk, alg: SIGNING_ALG }, SIGNING_ALG),
    publicJwk: { ...publicJwk, kid, alg: SIGNING_ALG, use: "sig" },
  };
}

function readOrCreate(file: string): JWK {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as JWK;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  const { privateKey } = generateKeyPairSync("ed25519");
  const temp = `${file}.${randomUUID()}.tmp`;
  writeFileSync(temp, JSON.stringify(privateKey.export({ format: "jwk" })), { mode: 0o600 });
  try {
    linkSync(temp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    rmSync(temp, { force: true });
  }
  return JSON.parse(readFileSync(file, "utf8")) as JWK;
}
