// The production adapter has its own entry, @cheese/blob-store/minio, so its client is loaded
// only by the processes that use it.
export { BlobSizeMismatchError } from "./exact-size.ts";
export { createFileBlobStore } from "./filesystem.ts";
export { type BlobInfo, type BlobStore, BlobStoreUnavailableError, type PutOptions } from "./port.ts";
