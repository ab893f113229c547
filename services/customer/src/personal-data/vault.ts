import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import type { CustomerFields } from "@cheese/contracts";
import { notFound } from "@cheese/service-kit";
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

  /**
   * Seals the account's own data with the customer's key, creating the key for a new customer.
   * Without a key the customer was erased, by a deletion that may have run since it was read: 404.
   */
  async seal(
    customerId: number,
    data: PersonalData,
    options: { newCustomer?: boolean } = {},
  ): Promise<string> {
    const key = options.newCustomer ? await this.keys.create(customerId) : await this.keys.get(customerId);
    if (!key) throw notFound(`customer ${customerId} not found`);
    return sealWith(key, aad(customerId), data);
  }

  /** The account's personal data, or undefined once the customer's key is destroyed. */
  async open(customerId: number, sealed: string): Promise<PersonalData | undefined> {
    const key = await this.keys.get(customerId);
    return key && (openWith(key, aad(customerId), sealed) as PersonalData);
  }

  /**
   * Seals what another service keeps about the customer (`purpose`: its shipping addresses and
   * notes for ordering) with the customer's key; undefined once the customer is erased.
   */
  async sealFor(customerId: number, purpose: string, data: unknown): Promise<string | undefined> {
    const key = await this.keys.get(customerId);
    return key && sealWith(key, aad(customerId, purpose), data);
  }

  /** Opens what `sealFor` sealed; undefined once the customer is erased. Throws if tampered with. */
  async openFor(customerId: number, purpose: string, sealed: string): Promise<unknown> {
    const key = await this.keys.get(customerId);
    return key && openWith(key, aad(customerId, purpose), sealed);
  }

  erase(customerId: number): Promise<void> {
    return this.keys.destroy(customerId);
  }
}

/** Authenticated data: the customer, and what the blob is for (none: the account itself). */
const aad = (customerId: number, purpose?: string) =>
  Buffer.from(purpose ? `customer-${customerId}/${purpose}` : `customer-${customerId}`);

function sealWith(key: Buffer, additional: Buffer, data: unknown): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(additional);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(data), "utf8"), cipher.final()]);
  return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64")}`;
}

function openWith(key: Buffer, additional: Buffer, sealed: string): unknown {
  const bytes = Buffer.from(sealed.slice(VERSION.length + 1), "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(additional);
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  return JSON.parse(plain.toString("utf8"));
}
