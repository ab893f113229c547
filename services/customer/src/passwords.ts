import { randomBytes } from "node:crypto";
import argon2 from "argon2";

/**
 * argon2id with OWASP's minimum (19 MiB, 2 passes, 1 lane): about 20 ms here, so a batch of 100
 * registrations stays within an internal deadline while brute force stays expensive.
 */
const options = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options);
}

/**
 * Verifies a password. Without a stored hash (unknown user) it verifies against a dummy hash
 * with the same parameters, so both answers take the same time and reveal nothing.
 */
export class PasswordChecker {
  private dummy: Promise<string> | undefined;

  /** Computes the dummy hash before the first login, so that one is not slower either. */
  async warmUp(): Promise<void> {
    this.dummy ??= hashPassword(randomBytes(16).toString("hex"));
    await this.dummy;
  }

  async verify(storedHash: string | undefined, password: string): Promise<boolean> {
    this.dummy ??= hashPassword(randomBytes(16).toString("hex"));
    const hash = storedHash ?? (await this.dummy);
    const matches = await argon2.verify(hash, password).catch(() => false);
    return storedHash !== undefined && matches;
  }
}
