import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { pipeline } from "node:stream";
import { Client } from "minio";
import { exactSize } from "./exact-size.ts";
import type { BlobInfo, BlobStore } from "./port.ts";
import { assertValidKey, assertValidPut, RESERVED_METADATA_KEYS } from "./validation.ts";

export interface MinioBlobStoreOptions {
  /** Server URL, e.g. http://127.0.0.1:9000. */
  endPoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region?: string;
}

/**
 * minio-js uploads an object of at most `partSize` bytes as one PUT (buffering it) and a larger
 * one as a multipart upload. Single PUTs are what we want: s3rver has no multipart upload, and
 * minio-js's multipart path does not notice a failing source stream (it would hang instead of
 * rejecting on a size mismatch). So puts above this size are refused outright.
 */
const SINGLE_PUT_LIMIT = 64 * 1024 * 1024;

const META_PREFIX = "x-amz-meta-";

export async function createMinioBlobStore(options: MinioBlobStoreOptions): Promise<BlobStore> {
  const url = new URL(options.endPoint);
  const useSSL = url.protocol === "https:";
  // An agent of our own, so close() can drop the keep-alive sockets.
  const agent = useSSL ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const client = new Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    // A fixed region spares a GetBucketLocation round trip before each first request.
    region: options.region ?? "us-east-1",
    pathStyle: true,
    partSize: SINGLE_PUT_LIMIT,
    transportAgent: agent,
  });
  const { bucket } = options;

  if (!(await client.bucketExists(bucket))) {
    try {
      await client.makeBucket(bucket, options.region ?? "us-east-1");
    } catch (error) {
      // Another instance may have created it in the meantime.
      if (!hasCode(error, "BucketAlreadyOwnedByYou", "BucketAlreadyExists")) throw error;
    }
  }

  async function stat(key: string): Promise<BlobInfo | undefined> {
    try {
      const item = await client.statObject(bucket, key);
      const headers = item.metaData as Record<string, string>;
      const metadata: Record<string, string> = {};
      // statObject strips the x-amz-meta- prefix but also passes on standard headers and
      // x-amz-* ones; validation keeps user metadata out of both name spaces.
      for (const [name, value] of Object.entries(headers)) {
        const lower = name.toLowerCase();
        if (!RESERVED_METADATA_KEYS.has(lower) && !lower.startsWith("x-amz-"))
          metadata[lower] = String(value);
      }
      return {
        key,
        size: item.size,
        contentType: headers["content-type"] ?? "application/octet-stream",
        etag: item.etag,
        lastModified: item.lastModified,
        metadata,
      };
    } catch (error) {
      if (hasCode(error, "NotFound", "NoSuchKey")) return undefined;
      throw error;
    }
  }

  return {
    async put(key, body, size, putOptions) {
      assertValidPut(key, size, putOptions);
      if (size > SINGLE_PUT_LIMIT) {
        body.destroy();
        throw new Error(`blob of ${size} bytes exceeds the ${SINGLE_PUT_LIMIT}-byte single-PUT limit`);
      }
      const headers: Record<string, string> = { "Content-Type": putOptions.contentType };
      for (const [name, value] of Object.entries(putOptions.metadata ?? {})) {
        headers[META_PREFIX + name] = value;
      }
      // minio-js reads the counted stream to its end before sending anything, so a size
      // mismatch rejects the put before a byte reaches the server.
      const counted = pipeline(body, exactSize(size), () => {});
      let uploaded: { etag: string };
      try {
        // minio-js does not read the stream at all for size 0; check it is empty ourselves.
        if (size === 0) await counted.toArray();
        uploaded = await client.putObject(bucket, key, size === 0 ? Buffer.alloc(0) : counted, size, headers);
      } catch (error) {
        counted.destroy();
        throw error;
      }
      // The server's own lastModified, unless another put overwrote the key in the meantime.
      const info = await stat(key);
      if (info?.etag === uploaded.etag) return info;
      const metadata = { ...putOptions.metadata };
      const lastModified = new Date(Math.floor(Date.now() / 1000) * 1000);
      return { key, size, contentType: putOptions.contentType, etag: uploaded.etag, lastModified, metadata };
    },

    async get(key) {
      assertValidKey(key);
      // Two requests: a put in between can pair this info with newer bytes (S3 offers no
      // If-Match on GET through minio-js). Acceptable: keys are written once in practice.
      const info = await stat(key);
      if (!info) return undefined;
      try {
        return { info, body: await client.getObject(bucket, key) };
      } catch (error) {
        if (hasCode(error, "NotFound", "NoSuchKey")) return undefined;
        throw error;
      }
    },

    async stat(key) {
      assertValidKey(key);
      return stat(key);
    },

    async delete(key) {
      assertValidKey(key);
      await client.removeObject(bucket, key);
    },

    async ping() {
      try {
        return await client.bucketExists(bucket);
      } catch {
        return false;
      }
    },

    async close() {
      agent.destroy();
    },
  };
}

function hasCode(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as { code?: string }).code ?? "");
}
