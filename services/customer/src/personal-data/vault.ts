import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import type { CustomerFields } from "@cheese/contracts";
import type { KeyStore } from "./key-store.ts";

/** What erasure must make unreadable: everything that identifies or authenticates a person. */
export interface PersonalData {
  firstName?: string;
  lastName?: string;
  email: string;
  phone: string | null;
  passwordHash: string;
}

/** The personal part of what a customer sent, with its password already hashed. */
export function personalData(fields: CustomerFields, passwordHash: string): PersonalData {
  return {
    ...(fields.firstName !== undefined ? { firstName: fields.firstName } : {}),
    ...(fields.lastName !== undefined ? { lastName: fields.lastName } : {}),
    email: fields.email,
    phone: fields.phone,
    passwordHash,
  };
}

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Crypto-shredding: personal data is sealed with AES-256-GCM under the customer's own key before
 * it reaches an event; destroying the key makes every copy, in every event and backup, unreadable.
 * The customer id is authenticated data, so a sealed blob cannot be replayed into another account.
 */
export class PersonalDataVault {
  private pepper: Promise<Buffer> | undefined;

  constructor(private readonly keys: KeyStore) {}

  /** A keyed hash of the normalised email: equal for equal emails, useless without the pepper. */
  async emailKey(email: string): Promise<string> {
    this.pepper ??= this.keys.secret("email-pepper");
    return createHmac("sha256", await this.pepper)
      .update(email.trim().toLowerCase())
      .digest("hex");
  }

  /** Seals with the customer's key, creating the key for a new customer. */
  async seal(
    customerId: number,
    data: PersonalData,
    options: { newCustomer?: boolean } = {},
  ): Promise<string> {
    const key = options.newCustomer ? await this.keys.create(customerId) : await this.keys.get(customerId);
    if (!key) throw new Error(`no personal-data key for customer ${customerId}`);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(Buffer.from(`customer-${customerId}`));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(data), "utf8"), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64")}`;
  }

  /** The personal data, or undefined once the customer's key is destroyed. */
  async open(customerId: number, sealed: string): Promise<PersonalData | undefined> {
    const key = await this.keys.get(customerId);
    if (!key) return undefined;
    const bytes = Buffer.from(sealed.slice(VERSION.length + 1), "base64");
    const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(`customer-${customerId}`));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    return JSON.parse(plain.toString("utf8")) as PersonalData;
  }

  erase(customerId: number): Promise<void> {
    return this.keys.destroy(customerId);
  }
}
