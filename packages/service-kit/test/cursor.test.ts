import { describe, expect, it } from "vitest";
import { z } from "zod";
import { decodeCursor, encodeCursor } from "../src/cursor.ts";

describe("the cursor codec", () => {
  const Position = z.strictObject({ createdAt: z.string(), id: z.number().int().positive() });

  it("gives back the position it encoded", () => {
    const position = { createdAt: "2026-11-22T10:00:00.000Z", id: 42 };
    const cursor = encodeCursor(position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, Position)).toEqual(position);
  });

  it("refuses anything it did not issue with 400", () => {
    const other = encodeCursor({ createdAt: "x", id: -1 });
    for (const cursor of ["not a cursor", "%%%", "eyJ", other, encodeCursor([1, 2])]) {
      expect(() => decodeCursor(cursor, Position), cursor).toThrow(
        expect.objectContaining({ body: expect.objectContaining({ status: 400, type: "bad_request" }) }),
      );
    }
  });
});
