import type { PutOptions } from "./port.ts";

/**
 * Rules every adapter enforces identically, so that a blob accepted by one store is
 * accepted by the other. They follow what S3 can carry: metadata travels as HTTP headers
 * (`x-amz-meta-*`), whose names are case-insensitive and whose values must be ASCII.
 */

const METADATA_KEY = /^[a-z0-9][a-z0-9-]*$/;
// Printable ASCII without surrounding spaces, which HTTP would trim away in transit.
const HEADER_VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/;

/**
 * Names S3 reads back as standard headers rather than user metadata (see minio-js's
 * extractMetadata): a user entry with such a name would collide with the real header.
 */
export const RESERVED_METADATA_KEYS = new Set([
  "content-type",
  "cache-control",
  "content-encoding",
  "content-disposition",
  "content-language",
  "expires",
  "if-match",
  "if-none-match",
]);

function isReservedMetadataKey(name: string): boolean {
  return RESERVED_METADATA_KEYS.has(name) || name.startsWith("x-amz-");
}

/** Keys are relative `/`-separated paths: no `.`/`..` or empty segments, no leading `/`. */
export function assertValidKey(key: string): void {
  const invalid =
    key.length === 0 ||
    Buffer.byteLength(key) > 1024 ||
    key.includes("\0") ||
    key.includes("\\") ||
    key.split("/").some((segment) => segment === "" || segment === "." || segment === "..");
  if (invalid) throw new Error(`invalid blob key: ${JSON.stringify(key)}`);
}

export function assertValidPut(key: string, size: number, options: PutOptions): void {
  assertValidKey(key);
  if (!Number.isSafeInteger(size) || size < 0) throw new Error(`invalid blob size: ${size}`);
  if (options.contentType === "" || !HEADER_VALUE.test(options.contentType)) {
    throw new Error(`invalid content type: ${JSON.stringify(options.contentType)}`);
  }
  for (const [name, value] of Object.entries(options.metadata ?? {})) {
    if (!METADATA_KEY.test(name) || isReservedMetadataKey(name) || !HEADER_VALUE.test(value)) {
      throw new Error(`invalid metadata entry: ${JSON.stringify(name)}=${JSON.stringify(value)}`);
    }
  }
}
