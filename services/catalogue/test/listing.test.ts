import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, resolveListRequest } from "../src/domain/listing.ts";

const position = {
  sort: "-name" as const,
  key: "brie",
  id: 42,
  filters: { status: ["available" as const], tags: ["cow"] },
};

describe("list cursors", () => {
  it("round-trips the position, sort and filters it was issued for", () => {
    const cursor = encodeCursor(position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor)).toEqual(position);
  });

  it("refuses anything that is not a cursor it issued (400)", () => {
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const valid = JSON.parse(Buffer.from(encodeCursor(position), "base64url").toString());
    for (const cursor of [
      "",
      "%%%",
      "bm90IGpzb24",
      forged({ ...valid, v: 2 }),
      forged({ ...valid, i: -1 }),
      forged({ ...valid, s: "price" }),
      forged({ ...valid, f: { status: ["eaten"] } }),
      forged({ ...valid, extra: 1 }),
    ]) {
      expect(() => decodeCursor(cursor), cursor).toThrow(
        expect.objectContaining({ body: expect.objectContaining({ status: 400 }) }),
      );
    }
  });

  it("continues with the cursor's sort and filters when the request leaves them out", () => {
    const cursor = encodeCursor(position);
    expect(resolveListRequest({ cursor, filters: {} })).toEqual({
      sort: "-name",
      filters: position.filters,
      after: position,
    });
    // The same filters written differently are the same filters.
    expect(
      resolveListRequest({ cursor, sort: "-name", filters: { tags: ["COW "], status: ["available"] } }).sort,
    ).toBe("-name");
  });

  it("refuses a cursor used with another sort or other filters (400)", () => {
    const cursor = encodeCursor(position);
    for (const request of [
      { cursor, sort: "name" as const, filters: {} },
      { cursor, filters: { tags: ["goat"] } },
      { cursor, filters: { organic: true } },
    ]) {
      expect(() => resolveListRequest(request)).toThrow(
        expect.objectContaining({ body: expect.objectContaining({ status: 400 }) }),
      );
    }
  });

  it("starts at the beginning, sorted by name, without a cursor", () => {
    expect(resolveListRequest({ filters: { category: " Soft " } })).toEqual({
      sort: "name",
      filters: { category: "soft" },
    });
  });
});
