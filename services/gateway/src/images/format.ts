import type { ImageFormat } from "@cheese/contracts";

/**
 * The format an upload claims by its first bytes (magic numbers), whatever its name or declared
 * Content-Type say. Whether it really decodes is checked by the catalogue with sharp.
 */
export function detectImageFormat(head: Uint8Array): ImageFormat | undefined {
  const starts = (bytes: number[], at = 0) => bytes.every((byte, i) => head[at + i] === byte);
  if (starts([0xff, 0xd8, 0xff])) return "jpeg";
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  // "RIFF" <size> "WEBP"
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "webp";
  return undefined;
}

export const extensions: Record<ImageFormat, string> = { jpeg: "jpg", png: "png", webp: "webp" };

export const mediaTypes: Record<ImageFormat, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
};
