import { describe, expect, it } from "vitest";
import { detectImageFormat } from "../src/index.ts";

describe("image formats from magic numbers", () => {
  const bytes = (...values: number[]) => new Uint8Array([...values, ...new Array(16).fill(0)]);
  it("knows JPEG, PNG and WebP by their first bytes and nothing else", () => {
    expect(detectImageFormat(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe("jpeg");
    expect(detectImageFormat(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a))).toBe("png");
    expect(detectImageFormat(new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8 "))).toBe("webp");
    expect(detectImageFormat(new TextEncoder().encode("RIFF\0\0\0\0WAVEfmt "))).toBeUndefined();
    expect(detectImageFormat(new TextEncoder().encode("GIF89a"))).toBeUndefined();
    expect(detectImageFormat(new Uint8Array())).toBeUndefined();
  });
});
