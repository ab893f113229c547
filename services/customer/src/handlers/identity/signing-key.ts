import { generateKeyPairSync } from "node:crypto";
import { readOrCreateFile } from "@cheese/service-kit";
import { calculateJwkThumbprint, importJWK, type JWK } from "jose";

export const SIGNING_ALG = "EdDSA";

export interface SigningKey {
  kid: string;
  privateKey: Awaited<ReturnType<typeof importJWK>>;
  publicJwk: JWK;
}

/**
 * The token signing key (Ed25519). Given as a private JWK in JWT_PRIVATE_KEY, or created once
 * under DATA_DIR and reused across restarts. Replicas on one host race to create it;
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
  const created = readOrCreateFile(file, () =>
    JSON.stringify(generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" })),
  );
  return JSON.parse(created.toString("utf8")) as JWK;
}
