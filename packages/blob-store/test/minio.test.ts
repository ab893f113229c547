import { freePort, tempDir } from "@cheese/testing";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMinioBlobStore } from "../src/minio.ts";
import { blobStoreContract } from "./contract.ts";

// s3rver is an in-process fake S3 (no Docker or MinIO binary needed). It accepts the
// S3RVER/S3RVER credentials and checks request signatures, so the real minio client is exercised.
let server: S3rver;
let endPoint: string;
const storage = tempDir("s3rver");

beforeAll(async () => {
  const port = await freePort();
  server = new S3rver({ port, address: "127.0.0.1", directory: storage.path, silent: true });
  await server.run();
  endPoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.close();
  storage.remove();
});

const connect = (bucket: string) =>
  createMinioBlobStore({ endPoint, accessKey: "S3RVER", secretKey: "S3RVER", bucket });

blobStoreContract("minio (against s3rver)", async () => ({
  store: await connect("blobs"),
  cleanup: async () => {},
}));

describe("minio blob store", () => {
  it("creates a missing bucket and reuses an existing one", async () => {
    const first = await connect("fresh-bucket");
    const second = await connect("fresh-bucket");
    expect(await first.ping()).toBe(true);
    expect(await second.ping()).toBe(true);
    await Promise.all([first.close(), second.close()]);
  });

  it("fails to start when the server is unreachable", async () => {
    const attempt = createMinioBlobStore({
      endPoint: `http://127.0.0.1:${await freePort()}`,
      accessKey: "S3RVER",
      secretKey: "S3RVER",
      bucket: "blobs",
    });
    await expect(attempt).rejects.toThrow();
  });

  it("pings false once the server is gone", async () => {
    const port = await freePort();
    const dir = tempDir("s3rver-gone");
    const doomed = new S3rver({ port, address: "127.0.0.1", directory: dir.path, silent: true });
    await doomed.run();
    const store = await createMinioBlobStore({
      endPoint: `http://127.0.0.1:${port}`,
      accessKey: "S3RVER",
      secretKey: "S3RVER",
      bucket: "blobs",
    });
    expect(await store.ping()).toBe(true);
    await store.close(); // drops keep-alive sockets, which would otherwise hold the server open
    await doomed.close();
    expect(await store.ping()).toBe(false);
    dir.remove();
  });
});
