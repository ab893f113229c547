import { AsyncLocalStorage } from "node:async_hooks";
import * as http from "node:http";
import * as https from "node:https";
import { pipeline } from "node:stream";
import { Client, S3Error } from "minio";
import { exactSize } from "./exact-size.ts";
import { type BlobInfo, type BlobStore, BlobStoreUnavailableError } from "./port.ts";
import { assertValidKey, assertValidPut, RESERVED_METADATA_KEYS } from "./validation.ts";

export interface MinioBlobStoreOptions {
  /** Server URL, e.g. http://127.0.0.1:9000. */
  endPoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** The bucket's region (S3_REGION). Default us-east-1, MinIO's own default. */
  region?: string;
  /**
   * Deadline of every call (S3_TIMEOUT): the server must start answering within it, and a body
   * being read must not stall longer. Past it the call fails with BlobStoreUnavailableError.
   * Default 10 s.
   */
  timeoutMs?: number;
}

/**
 * minio-js uploads an object of at most `partSize` bytes as one PUT (buffering it) and a larger
 * one as a multipart upload. Single PUTs are what we want: s3rver has no multipart upload, and
 * minio-js's multipart path does not notice a failing source stream (it would hang instead of
 * rejecting on a size mismatch). So puts above this size are refused outright.
 */
const SINGLE_PUT_LIMIT = 64 * 1024 * 1024;

const META_PREFIX = "x-amz-meta-";

/**
 * The MinIO/S3 adapter, on the official minio-js client. What the client leaves to its caller
 * (docs/operations.md says how each was verified):
 * - it has no timeout at all: requests go through a transport of ours that puts a deadline on
 *   each (see `timeoutMs`);
 * - a HEAD answers 404 without a body, so minio-js reports a missing bucket and a missing object
 *   alike ("NotFound"): a miss is confirmed by asking whether the bucket exists;
 * - it retries a 5xx once, logging it with a bare console.warn, then throws a plain Error with no
 *   code or status: its retry is off here (no console.warn; a 503 with Retry-After lets the
 *   caller retry instead), and our transport notes the status of each call's answers, so a 5xx
 *   (or an S3 error such as `SlowDown` in a 200) is BlobStoreUnavailableError by its status;
 * - everything that means "the storage cannot serve" becomes BlobStoreUnavailableError.
 */
export async function createMinioBlobStore(options: MinioBlobStoreOptions): Promise<BlobStore> {
  const url = new URL(options.endPoint);
  const useSSL = url.protocol === "https:";
  const timeoutMs = options.timeoutMs ?? 10_000;
  const region = options.region ?? "us-east-1";
  // An agent of our own, so close() can drop the keep-alive sockets.
  const agent = useSSL ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  const client = new Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    // Known, so no GetBucketLocation round trip before the first request.
    region,
    pathStyle: true,
    partSize: SINGLE_PUT_LIMIT,
    retryOptions: { disableRetry: true },
    // minio-js only ever calls transport.request(options, callback).
    transport: deadlineTransport(useSSL ? https : http, timeoutMs) as unknown as typeof http,
    transportAgent: agent,
  });
  const { bucket } = options;

  /** Runs one client call; what means "the storage cannot serve" becomes BlobStoreUnavailableError. */
  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    const answers: CallAnswers = { serverFailure: false };
    try {
      return await callAnswers.run(answers, run);
    } catch (error) {
      if (hasCode(error, "NoSuchBucket")) throw missingBucket(error);
      if (
        error instanceof BlobStoreUnavailableError ||
        isUnreachable(error) ||
        answers.serverFailure ||
        isServerFailure(error)
      ) {
        throw new BlobStoreUnavailableError(`MinIO could not ${what}: ${(error as Error).message}`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  const missingBucket = (cause?: unknown) =>
    new BlobStoreUnavailableError(`the bucket ${bucket} does not exist on ${url.host}`, { cause });

  /** A 404 without a body: the object is missing, unless the bucket is. */
  async function confirmMiss(): Promise<undefined> {
    if (!(await call("check the bucket", () => client.bucketExists(bucket)))) throw missingBucket();
    return undefined;
  }

  await call("reach the bucket", async () => {
    if (await client.bucketExists(bucket)) return;
    try {
      await client.makeBucket(bucket, region);
    } catch (error) {
      // Another instance may have created it in the meantime.
      if (!hasCode(error, "BucketAlreadyOwnedByYou", "BucketAlreadyExists")) throw error;
    }
  });

  async function stat(key: string): Promise<BlobInfo | undefined> {
    let item: Awaited<ReturnType<typeof client.statObject>>;
    try {
      item = await call("read an object's metadata", () => client.statObject(bucket, key));
    } catch (error) {
      if (hasCode(error, "NotFound", "NoSuchKey")) return confirmMiss();
      throw error;
    }
    const headers = item.metaData as Record<string, string>;
    const metadata: Record<string, string> = {};
    // statObject strips the x-amz-meta- prefix but also passes on standard headers and
    // x-amz-* ones; validation keeps user metadata out of both name spaces.
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (!RESERVED_METADATA_KEYS.has(lower) && !lower.startsWith("x-amz-")) metadata[lower] = String(value);
    }
    return {
      key,
      size: item.size,
      contentType: headers["content-type"] ?? "application/octet-stream",
      etag: item.etag,
      lastModified: item.lastModified,
      metadata,
    };
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
        uploaded = await call("store an object", () =>
          client.putObject(bucket, key, size === 0 ? Buffer.alloc(0) : counted, size, headers),
        );
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
        return { info, body: await call("read an object", () => client.getObject(bucket, key)) };
      } catch (error) {
        if (hasCode(error, "NotFound", "NoSuchKey")) return confirmMiss();
        throw error;
      }
    },

    async stat(key) {
      assertValidKey(key);
      return stat(key);
    },

    async delete(key) {
      assertValidKey(key);
      await call("delete an object", () => client.removeObject(bucket, key));
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

/** What the server answered during one call (`call`), noted by the transport. */
interface CallAnswers {
  /** Some answer had a 5xx status other than 501 (Not Implemented: a refusal, not a failure). */
  serverFailure: boolean;
}
const callAnswers = new AsyncLocalStorage<CallAnswers>();

/**
 * http or https with a deadline on every request: the response must begin within `timeoutMs`
 * of the request, and the socket may not then sit idle for longer (a stalled body). minio-js
 * calls `transport.request(options, callback)` and nothing else.
 */
function deadlineTransport(module: typeof http | typeof https, timeoutMs: number) {
  return {
    request(options: http.RequestOptions, callback?: (response: http.IncomingMessage) => void) {
      const request = module.request(options, callback);
      const expire = () =>
        request.destroy(new BlobStoreUnavailableError(`no answer from MinIO within ${timeoutMs} ms`));
      const firstByte = setTimeout(expire, timeoutMs);
      request.setTimeout(timeoutMs, expire);
      const answers = callAnswers.getStore();
      request.once("response", (response) => {
        clearTimeout(firstByte);
        const status = response.statusCode ?? 0;
        if (answers && status >= 500 && status !== 501) answers.serverFailure = true;
        response.setTimeout?.(timeoutMs, () =>
          response.destroy(new BlobStoreUnavailableError(`MinIO stalled for ${timeoutMs} ms`)),
        );
      });
      request.once("close", () => clearTimeout(firstByte));
      return request;
    },
  };
}

function hasCode(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as { code?: string }).code ?? "");
}

/** S3 error codes of a server that cannot serve now, whatever status carried them. */
const SERVER_FAILURES = new Set([
  "SlowDown",
  "SlowDownRead",
  "SlowDownWrite",
  "ServiceUnavailable",
  "InternalError",
  "RequestTimeout",
  "OperationTimedOut",
  "XMinioServerNotInitialized",
]);

function isServerFailure(error: unknown): boolean {
  return error instanceof S3Error && SERVER_FAILURES.has((error as { code?: string }).code ?? "");
}

/** Network failures: nothing listening, connection reset, name unknown. */
function isUnreachable(error: unknown): boolean {
  return hasCode(
    error,
    "ECONNREFUSED",
    "ECONNRESET",
    "EHOSTUNREACH",
    "ENOTFOUND",
    "EAI_AGAIN",
    "EPIPE",
    "ETIMEDOUT",
  );
}
