export { BlobSizeMismatchError } from "./exact-size.ts";
export { createFileBlobStore } from "./filesystem.ts";
export { createMinioBlobStore, type MinioBlobStoreOptions } from "./minio.ts";
export { type BlobInfo, type BlobStore, BlobStoreUnavailableError, type PutOptions } from "./port.ts";
