import { DomainError } from "@cheese/service-kit";

/** Opaque keyset cursors: base64url JSON of the last item's sort key. */
export function encodeCursor(key: unknown): string {
  return Buffer.from(JSON.stringify(key), "utf8").toString("base64url");
}

export function decodeCursor<T>(cursor: string, valid: (value: unknown) => value is T): T {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (valid(value)) return value;
  } catch {}
  throw new DomainError(400, "bad_request", "invalid cursor");
}
