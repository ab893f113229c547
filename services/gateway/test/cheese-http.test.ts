import { describe, expect, it } from "vitest";
import { notModified, parseIfMatch } from "../src/routes/preconditions.ts";

describe("If-Match", () => {
  it("reads strong ETags, lists and *; weak or malformed tags match nothing", () => {
    expect(parseIfMatch(undefined)).toBeUndefined();
    expect(parseIfMatch("*")).toBe("*");
    expect(parseIfMatch('"3"')).toEqual([3]);
    expect(parseIfMatch('"3", "5"')).toEqual([3, 5]);
    expect(parseIfMatch("7")).toEqual([7]);
    expect(parseIfMatch('W/"3"')).toEqual([]);
    expect(parseIfMatch('"abc"')).toEqual([]);
  });

  it("If-None-Match matches the current ETag, weakly, or *", () => {
    expect(notModified('"4"', '"4"')).toBe(true);
    expect(notModified('W/"4", "9"', '"4"')).toBe(true);
    expect(notModified("*", '"4"')).toBe(true);
    expect(notModified('"3"', '"4"')).toBe(false);
    expect(notModified(undefined, '"4"')).toBe(false);
  });
});
