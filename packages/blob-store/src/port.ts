/**
 * The blob store port: image originals and thumbnails. Adapters: MinIO / S3 (production)
 * and the filesystem under DATA_DIR (embedded). Bytes are streamed; nothing is buffered whole.
 */
import type { Readable } from "node:stream";

export interface BlobInfo {
  key: string;
  size: number;
  contentType: string;
  /** Strong validator for HTTP caching. */
  etag: string;
  lastModified: Date;
  metadata: Record<string, string>;
}

export interface PutOptions {
  contentType: string;
  metadata?: Record<string, string>;
}

/**
 * The storage itself cannot serve: unreachable, not answering within its deadline, or without
 * its bucket (or directory). Never "not found": a missing key is `undefined`, a missing bucket
 * is this. Services answer it with 503 and Retry-After; `dependency` names what is down (every
 * port's unavailable error has it).
 */
export class BlobStoreUnavailableError extends Error {
  override readonly name = "BlobStoreUnavailableError";
  readonly dependency = "file storage";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface BlobStore {
  /**
   * Stores exactly `size` bytes read from `body` under `key`, replacing any previous blob.
   * Rejects (storing nothing) if the stream yields more or fewer bytes than `size`.
   */
  put(key: string, body: Readable, size: number, options: PutOptions): Promise<BlobInfo>;
  /**
   * The blob as a stream, or undefined when absent. Every operation rejects with
   * {@link BlobStoreUnavailableError} when the storage cannot answer (see there).
   */
  get(key: string): Promise<{ info: BlobInfo; body: Readable } | undefined>;
  stat(key: string): Promise<BlobInfo | undefined>;
  /** Deletes; absent keys are not an error. */
  delete(key: string): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
