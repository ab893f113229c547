import { Readable } from "node:stream";
import type { BlobStore } from "@cheese/blob-store";
import { type CheeseImage, type ImageFormat, imageMediaTypes } from "@cheese/contracts";
import {
  contextMetadata,
  type HandlerContext,
  handleCommand,
  isoNow,
  payloadTooLarge,
  unsupportedMediaType,
  validationFailed,
} from "@cheese/service-kit";
import type { Metadata } from "sharp";
import { cheeseDecider, cheeseStream, type StoredImage } from "../domain/cheese.ts";
import type { CatalogueDeps } from "./deps.ts";

/** Decompression bombs: a small file may decode to gigapixels; more than this is refused. */
export const MAX_IMAGE_PIXELS = 50_000_000;
/** Longest side of a thumbnail. */
export const THUMBNAIL_SIZE = 256;

export interface AttachImageRequest {
  cheeseId: number;
  originalKey: string;
  thumbnailKey: string;
  format: ImageFormat;
  size: number;
  imageUrl: string;
  thumbnailUrl: string;
  caption: string | null;
  isPrimary: boolean;
}

/**
 * The gateway stored the original; here it is decoded from the blob store (415 when it is not
 * the format its bytes claim, or does not decode), a WebP thumbnail is written beside it, and
 * the image is recorded on the cheese. Whatever fails, the blobs written for it are removed.
 */
export async function attachImage(
  deps: CatalogueDeps,
  request: AttachImageRequest,
  context: HandlerContext,
): Promise<{ image: CheeseImage; revision: number }> {
  try {
    const original = await readBlob(deps.blobs, request.originalKey, request.size);
    const { width, height, thumbnail } = await makeThumbnail(original, request.format);
    await deps.blobs.put(request.thumbnailKey, Readable.from([thumbnail]), thumbnail.length, {
      contentType: imageMediaTypes.webp,
      metadata: { "cheese-id": String(request.cheeseId) },
    });
    const at = isoNow(deps.clock);
    const image: StoredImage = {
      key: request.originalKey,
      thumbnailKey: request.thumbnailKey,
      imageUrl: request.imageUrl,
      thumbnailUrl: request.thumbnailUrl,
      size: request.size,
      contentType: imageMediaTypes[request.format],
      width,
      height,
      caption: request.caption,
      isPrimary: request.isPrimary,
      createdAt: at,
    };
    const { state } = await handleCommand(
      deps.store,
      cheeseStream(request.cheeseId),
      cheeseDecider,
      { type: "AttachImage", image, at },
      { metadata: contextMetadata(context) },
    );
    return { image: publicImage(image), revision: state.revision };
  } catch (error) {
    for (const key of [request.originalKey, request.thumbnailKey]) {
      await deps.blobs.delete(key).catch(() => {});
    }
    throw error;
  }
}

export function publicImage(image: StoredImage): CheeseImage {
  const { key: _key, thumbnailKey: _thumbnailKey, ...visible } = image;
  return visible;
}

async function readBlob(blobs: BlobStore, key: string, size: number): Promise<Buffer> {
  const blob = await blobs.get(key);
  if (!blob || blob.info.size !== size) {
    throw validationFailed("the uploaded file was not found in storage", [
      { field: "file", message: "not stored" },
    ]);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of blob.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Decodes fully (a thumbnail needs every pixel), so a truncated or corrupt file is caught here.
 * Checks the pixel count from the header first, before anything large is allocated.
 */
async function makeThumbnail(bytes: Buffer, format: ImageFormat) {
  // Loaded on the first upload: libvips costs every catalogue process ~15 MB resident otherwise.
  const { default: sharp } = await import("sharp");
  const options = { limitInputPixels: MAX_IMAGE_PIXELS, failOn: "warning" as const };
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { ...options, limitInputPixels: false }).metadata();
  } catch {
    throw unsupported("the file does not decode as an image");
  }
  if (metadata.format !== format) throw unsupported("the file does not decode as JPEG, PNG or WebP");
  const width = metadata.width ?? 0;
  const height = metadata.height ?? 0;
  if (width * height > MAX_IMAGE_PIXELS) {
    throw payloadTooLarge(
      `the image is ${width}×${height} pixels; at most ${MAX_IMAGE_PIXELS / 1_000_000} megapixels are accepted`,
    );
  }
  try {
    const thumbnail = await sharp(bytes, options)
      .rotate()
      .resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: "inside" })
      .webp({ quality: 80 })
      .toBuffer();
    return { width, height, thumbnail };
  } catch {
    throw unsupported("the file does not decode as an image");
  }
}

const unsupported = unsupportedMediaType;
