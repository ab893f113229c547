import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { freePort, S3_SLOW_DOWN, startTcpRelay, type TcpRelay, tempDir } from "@cheese/testing";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createMinioBlobStore } from "../src/minio.ts";
import { BlobStoreUnavailableError } from "../src/port.ts";
import { blobStoreContract } from "./contract.ts";
import { removeBucket } from "./minio-admin.ts";

// s3rver is an in-process fake S3 (no Docker or MinIO binary needed). It accepts the
// S3RVER/S3RVER credentials and checks request signatures, so the real minio client is exercised.
let server: S3rver;
let port: number;
let endPoint: string;
const storage = tempDir("s3rver");

beforeAll(async () => {
  port = await freePort();
  server = new S3rver({ port, address: "127.0.0.1", directory: storage.path, silent: true });
  await server.run();
  endPoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.close();
  storage.remove();
});

const credentials = { accessKey: "S3RVER", secretKey: "S3RVER" };
const connect = (bucket: string, at = endPoint, more: { region?: string; timeoutMs?: number } = {}) =>
  createMinioBlobStore({ endPoint: at, ...credentials, bucket, ...more });

blobStoreContract("minio (against s3rver)", async () => {
  const bucket = `blobs-${randomBytes(4).toString("hex")}`;
  return {
    store: await connect(bucket),
    cleanup: async () => {},
    removeBucket: () => removeBucket(endPoint, credentials, bucket),
  };
});

/** A relay in front of s3rver that notes the credential scope each request was signed for. */
async function relay(): Promise<TcpRelay & { url: string; scopes: string[] }> {
  const scopes: string[] = [];
  const front = await startTcpRelay(port, {
    onClientData(chunk) {
      const scope = /Credential=[^/]+\/\d+\/([^/]+)\/s3\/aws4_request/.exec(chunk.toString("latin1"))?.[1];
      if (scope) scopes.push(scope);
    },
  });
  return Object.assign(front, { url: `http://127.0.0.1:${front.port}`, scopes });
}

describe("minio blob store", () => {
  it("creates a missing bucket and reuses an existing one", async () => {
    const first = await connect("fresh-bucket");
    const second = await connect("fresh-bucket");
    expect(await first.ping()).toBe(true);
    expect(await second.ping()).toBe(true);
    await Promise.all([first.close(), second.close()]);
  });

  it("fails to start when the server is unreachable", async () => {
    await expect(connect("blobs", `http://127.0.0.1:${await freePort()}`)).rejects.toThrow(
      BlobStoreUnavailableError,
    );
  });

  it("signs its requests for the region it is given (S3_REGION)", async () => {
    const front = await relay();
    try {
      const store = await connect("regional", front.url, { region: "eu-west-3" });
      await store.put("a", Readable.from([Buffer.from("x")]), 1, { contentType: "text/plain" });
      expect(await store.stat("a")).toMatchObject({ size: 1 });
      await store.close();
      expect(front.scopes.length).toBeGreaterThan(0);
      expect(new Set(front.scopes)).toEqual(new Set(["eu-west-3"]));
    } finally {
      await front.close();
    }
  });

  it("gives every call a deadline: against a MinIO that hangs, each fails within it, unavailable", async () => {
    const front = await relay();
    try {
      const store = await connect("hanging", front.url, { timeoutMs: 300 });
      await store.put("kept", Readable.from([Buffer.from("x")]), 1, { contentType: "text/plain" });
      front.hang();
      const started = Date.now();
      const attempts = [
        store.stat("kept"),
        store.get("kept"),
        store.delete("kept"),
        store.put("new", Readable.from([Buffer.from("y")]), 1, { contentType: "text/plain" }),
      ];
      for (const attempt of attempts) await expect(attempt).rejects.toBeInstanceOf(BlobStoreUnavailableError);
      expect(await store.ping()).toBe(false);
      // Each waited its own deadline (minio-js retries nothing here), not forever.
      expect(Date.now() - started).toBeLessThan(5_000);
      await store.close();
      await expect(connect("hanging", front.url, { timeoutMs: 300 })).rejects.toBeInstanceOf(
        BlobStoreUnavailableError,
      );
    } finally {
      await front.close();
    }
  });

  it("a server answering 503 SlowDown: every call fails at once as unavailable, quietly, until it recovers", async () => {
    const front = await relay();
    const warn = vi.spyOn(console, "warn");
    try {
      const store = await connect("slowing", front.url);
      await store.put("kept", Readable.from([Buffer.from("x")]), 1, { contentType: "text/plain" });
      front.answerWith(S3_SLOW_DOWN);
      const attempts = [
        () => store.stat("kept"),
        () => store.get("kept"),
        () => store.delete("kept"),
        () => store.put("new", Readable.from([Buffer.from("y")]), 1, { contentType: "text/plain" }),
      ];
      for (const attempt of attempts)
        await expect(attempt()).rejects.toBeInstanceOf(BlobStoreUnavailableError);
      expect(await store.ping()).toBe(false);
      // minio-js's own retry would log each 5xx with a bare console.warn, outside our logger.
      expect(warn).not.toHaveBeenCalled();
      front.resume();
      expect(await store.stat("kept")).toMatchObject({ size: 1 });
      await store.close();
    } finally {
      warn.mockRestore();
      await front.close();
    }
  });

  it("a server that stops answering, then comes back: unavailable meanwhile, served again after", async () => {
    const front = await relay();
    try {
      const store = await connect("stopping", front.url, { timeoutMs: 300 });
      await store.put("kept", Readable.from([Buffer.from("x")]), 1, { contentType: "text/plain" });
      front.hang();
      await expect(store.stat("kept")).rejects.toBeInstanceOf(BlobStoreUnavailableError);
      front.resume();
      expect(await store.stat("kept")).toMatchObject({ size: 1 });
      expect((await store.get("kept"))?.info.size).toBe(1);
      await store.close();
    } finally {
      await front.close();
    }
  });

  it("pings false once the server is gone", async () => {
    const gonePort = await freePort();
    const dir = tempDir("s3rver-gone");
    const doomed = new S3rver({ port: gonePort, address: "127.0.0.1", directory: dir.path, silent: true });
    await doomed.run();
    const store = await connect("blobs", `http://127.0.0.1:${gonePort}`);
    expect(await store.ping()).toBe(true);
    await store.close(); // drops keep-alive sockets, which would otherwise hold the server open
    await doomed.close();
    expect(await store.ping()).toBe(false);
    dir.remove();
  });
});
