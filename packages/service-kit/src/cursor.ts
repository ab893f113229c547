import type { z } from "zod";
import { badRequest } from "./errors.ts";

/**
 * Keyset pagination cursors, one codec for every list: base64url of the JSON of the position
 * after which the next page starts (the last item's sort key and id, and whatever else the list
 * must check, such as the filters it was issued for). Opaque to clients; the service that issues
 * a cursor is the one that reads it.
 */
export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position)).toString("base64url");
}

/** The position in `cursor`; 400 when it is not one this list issued. */
export function decodeCursor<S extends z.ZodType>(cursor: string, schema: S): z.output<S> {
  const invalid = () => badRequest("invalid cursor: use a nextCursor as returned");
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw invalid();
  return result.data;
}
