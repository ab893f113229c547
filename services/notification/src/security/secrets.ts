import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { readOrCreateFile } from "@cheese/service-kit";

/** A new signing secret: `whsec_` + base64 of 32 random bytes (docs/webhooks.md). */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** A secret as stored in events and read models: AES-256-GCM, never the plain text. */
export interface SealedSecret {
  alg: "A256GCM";
  iv: string;
  tag: string;
  data: string;
}

/**
 * Encrypts webhook secrets at rest, so the event store and read models (and their backups) hold
 * nothing that could sign a delivery. The key comes from WEBHOOK_SECRETS_KEY or a file under
 * DATA_DIR that never leaves the machine.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("the secrets key must be 32 bytes");
  }

  seal(secret: string): SealedSecret {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    return {
      alg: "A256GCM",
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      data: data.toString("base64"),
    };
  }

  open(sealed: SealedSecret): string {
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(sealed.iv, "base64"));
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString(
      "utf8",
    );
  }
}

/**
 * The key file is created once and shared by replicas on one host: it is published with
 * link(2), which fails for all but the first writer, so every replica reads the same key.
 */
export function loadSecretsKey(file: string): Buffer {
  const text = readOrCreateFile(file, () => randomBytes(32).toString("base64")).toString("utf8");
  const key = Buffer.from(text.trim(), "base64");
  if (key.length !== 32) throw new Error(`${file} does not hold a base64 32-byte key`);
  return key;
}
