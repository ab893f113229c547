import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlobSizeMismatchError } from "../src/exact-size.ts";
import { type BlobStore, BlobStoreUnavailableError } from "../src/port.ts";

const MiB = 1024 * 1024;

export interface BlobStoreFixture {
  store: BlobStore;
  cleanup(): Promise<void>;
  /** Takes the store's bucket (or directory) away from under it, as an operator's mistake would. */
  removeBucket(): Promise<void>;
}

/** Behaviour every BlobStore adapter must show; each adapter's test file runs it. */
export function blobStoreContract(name: string, factory: () => Promise<BlobStoreFixture>): void {
  describe(`BlobStore contract: ${name}`, () => {
    let store: BlobStore;
    let cleanup: () => Promise<void>;
    // Every test writes under its own prefix, so tests cannot see each other's blobs.
    const key = (suffix: string) => `t-${randomBytes(6).toString("hex")}/${suffix}`;

    beforeAll(async () => {
      ({ store, cleanup } = await factory());
    });
    afterAll(async () => {
      await store?.close();
      await cleanup?.();
    });

    it("answers ping", async () => {
      expect(await store.ping()).toBe(true);
    });

    it("round-trips a few MB streamed in chunks, with content type and metadata", async () => {
      const bytes = randomBytes(3 * MiB + 17);
      const k = key("photo.webp");
      const before = Date.now();
      const info = await store.put(k, chunked(bytes), bytes.length, {
        contentType: "image/webp",
        metadata: { "cheese-id": "42", variant: "original", note: "a b/c=d;e" },
      });
      expect(info).toMatchObject({
        key: k,
        size: bytes.length,
        contentType: "image/webp",
      });
      expect(info.metadata).toEqual({ "cheese-id": "42", variant: "original", note: "a b/c=d;e" });
      expect(info.etag).toMatch(/\S/);
      // Stores may keep whole seconds only (S3 does).
      expect(info.lastModified.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(info.lastModified.getTime()).toBeLessThanOrEqual(Date.now() + 1000);

      const got = await store.get(k);
      expect(got?.info).toEqual(info);
      expect(sha256(await readAll(got!.body))).toBe(sha256(bytes));
      expect(await store.stat(k)).toEqual(info);
    });

    it("stores an empty blob", async () => {
      const k = key("empty");
      await store.put(k, Readable.from([]), 0, { contentType: "text/plain" });
      const got = await store.get(k);
      expect(got?.info.size).toBe(0);
      expect((await readAll(got!.body)).length).toBe(0);
    });

    it("returns undefined from get and stat of a missing key", async () => {
      expect(await store.get(key("missing"))).toBeUndefined();
      expect(await store.stat(key("missing"))).toBeUndefined();
    });

    it("replaces a blob on overwrite, including its metadata and etag", async () => {
      const k = key("over");
      const first = await put(store, k, Buffer.from("first version"), { v: "1" });
      const second = Buffer.from("second, longer version");
      const info = await put(store, k, second, { v: "2" });
      expect(info.etag).not.toBe(first.etag);
      const got = await store.get(k);
      expect(got?.info).toMatchObject({ size: second.length, etag: info.etag, metadata: { v: "2" } });
      expect((await readAll(got!.body)).toString()).toBe("second, longer version");
    });

    it("deletes, and deleting a missing key is fine", async () => {
      const k = key("gone");
      await put(store, k, Buffer.from("bye"));
      await store.delete(k);
      expect(await store.get(k)).toBeUndefined();
      expect(await store.stat(k)).toBeUndefined();
      await expect(store.delete(k)).resolves.toBeUndefined();
      await expect(store.delete(key("never-existed"))).resolves.toBeUndefined();
    });

    it("rejects a body longer than declared, stops reading it, and stores nothing", async () => {
      const k = key("too-long");
      const body = endless();
      await expect(store.put(k, body.stream, 1 * MiB, { contentType: "x/y" })).rejects.toThrow(
        BlobSizeMismatchError,
      );
      // Reading stops right after the limit (allowing for stream buffering), not at the end.
      expect(body.pulled()).toBeLessThan(3 * MiB);
      expect(await store.stat(k)).toBeUndefined();
    });

    it("keeps the previous blob when an overwrite has the wrong size", async () => {
      const k = key("kept");
      const original = await put(store, k, Buffer.from("original"));
      await expect(store.put(k, chunked(Buffer.alloc(20)), 10, { contentType: "x/y" })).rejects.toThrow(
        BlobSizeMismatchError,
      );
      await expect(store.put(k, chunked(Buffer.alloc(5)), 10, { contentType: "x/y" })).rejects.toThrow(
        BlobSizeMismatchError,
      );
      expect(await store.stat(k)).toEqual(original);
      expect((await readAll((await store.get(k))!.body)).toString()).toBe("original");
    });

    it("rejects a body shorter than declared and stores nothing", async () => {
      const k = key("too-short");
      await expect(store.put(k, chunked(randomBytes(1000)), 1001, { contentType: "x/y" })).rejects.toThrow(
        BlobSizeMismatchError,
      );
      expect(await store.stat(k)).toBeUndefined();
    });

    it("rejects a non-empty body declared as empty", async () => {
      const k = key("not-empty");
      await expect(store.put(k, chunked(Buffer.from("x")), 0, { contentType: "x/y" })).rejects.toThrow(
        BlobSizeMismatchError,
      );
      expect(await store.stat(k)).toBeUndefined();
    });

    it("rejects when the body stream fails, and stores nothing", async () => {
      const k = key("broken");
      const failing = Readable.from(
        (async function* () {
          yield randomBytes(1000);
          throw new Error("client went away");
        })(),
      );
      await expect(store.put(k, failing, 5000, { contentType: "x/y" })).rejects.toThrow("client went away");
      expect(await store.stat(k)).toBeUndefined();
    });

    it("handles keys with slashes, including one key being a prefix of another", async () => {
      const parent = key("cheeses/42");
      const child = `${parent}/abc.webp`;
      await put(store, parent, Buffer.from("parent"));
      await put(store, child, Buffer.from("child"));
      expect((await readAll((await store.get(parent))!.body)).toString()).toBe("parent");
      expect((await readAll((await store.get(child))!.body)).toString()).toBe("child");
      await store.delete(parent);
      expect((await store.stat(child))?.size).toBe(5);
    });

    it("stores a 10 MB blob", async () => {
      const bytes = randomBytes(10 * MiB);
      const k = key("big.jpg");
      await store.put(k, chunked(bytes), bytes.length, { contentType: "image/jpeg" });
      const got = await store.get(k);
      expect(got?.info.size).toBe(bytes.length);
      expect(sha256(await readAll(got!.body))).toBe(sha256(bytes));
    });

    it.each(["", "/abs", "../escape", "a/../../b", "a//b", "a/", "./a", "a/./b"])(
      "rejects the invalid key %j",
      async (bad) => {
        await expect(store.put(bad, chunked(Buffer.from("x")), 1, { contentType: "x/y" })).rejects.toThrow(
          /invalid blob key/,
        );
        await expect(store.get(bad)).rejects.toThrow(/invalid blob key/);
        await expect(store.stat(bad)).rejects.toThrow(/invalid blob key/);
        await expect(store.delete(bad)).rejects.toThrow(/invalid blob key/);
      },
    );

    it("fails loudly, never 'not found', when its bucket is missing", async () => {
      const own = await factory(); // its own bucket, so the other cases keep theirs
      try {
        const kept = key("kept");
        await put(own.store, kept, Buffer.from("here"));
        await own.removeBucket();
        const unavailable = (attempt: Promise<unknown>) =>
          expect(attempt).rejects.toBeInstanceOf(BlobStoreUnavailableError);
        await unavailable(own.store.stat(kept));
        await unavailable(own.store.get(kept));
        await unavailable(own.store.stat(key("never-there")));
        await unavailable(own.store.get(key("never-there")));
        await unavailable(own.store.delete(kept));
        await unavailable(own.store.put(key("new"), chunked(Buffer.from("x")), 1, { contentType: "x/y" }));
        expect(await own.store.ping()).toBe(false);
      } finally {
        await own.store.close();
        await own.cleanup();
      }
    });

    it("rejects metadata S3 could not carry back unchanged", async () => {
      const unrepresentable: Record<string, string>[] = [
        { Upper: "x" },
        { "content-type": "x" },
        { "x-amz-acl": "x" },
        { ok: "é" },
        { ok: " padded " },
      ];
      for (const metadata of unrepresentable) {
        await expect(
          store.put(key("meta"), chunked(Buffer.from("x")), 1, { contentType: "x/y", metadata }),
        ).rejects.toThrow(/invalid metadata/);
      }
    });
  });
}

function put(store: BlobStore, key: string, bytes: Buffer, metadata?: Record<string, string>) {
  return store.put(key, chunked(bytes), bytes.length, { contentType: "application/octet-stream", metadata });
}

/** A stream yielding `bytes` in 64 KiB chunks, the way an HTTP upload arrives. */
function chunked(bytes: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let offset = 0; offset < bytes.length; offset += 64 * 1024)
        yield bytes.subarray(offset, offset + 64 * 1024);
    })(),
  );
}

/** A stream that never ends (capped at 100 MiB so a broken adapter fails instead of hanging). */
function endless(): { stream: Readable; pulled: () => number } {
  let pulled = 0;
  const chunk = randomBytes(64 * 1024);
  const stream = Readable.from(
    (function* () {
      while (pulled < 100 * MiB) {
        pulled += chunk.length;
        yield chunk;
      }
    })(),
  );
  return { stream, pulled: () => pulled };
}

async function readAll(body: Readable): Promise<Buffer> {
  return Buffer.concat(await body.toArray());
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
