import { readdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { tempDir } from "@cheese/testing";
import { describe, expect, it } from "vitest";
import { createFileBlobStore } from "../src/filesystem.ts";
import { blobStoreContract } from "./contract.ts";

blobStoreContract("filesystem", async () => {
  const dir = tempDir("blob-store");
  const root = join(dir.path, "store");
  return {
    store: createFileBlobStore({ dir: root }),
    cleanup: async () => dir.remove(),
    removeBucket: () => rm(root, { recursive: true, force: true }),
  };
});

describe("filesystem blob store on disk", () => {
  /** Every file under `root`, relative to it. */
  const files = (root: string): string[] =>
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1));

  it("writes nothing outside its directory for keys that try to escape it", async () => {
    const parent = tempDir("blob-store-parent");
    const dir = join(parent.path, "store");
    const store = createFileBlobStore({ dir });
    try {
      for (const key of ["../outside", "a/../../outside", "/tmp/outside"]) {
        await expect(
          store.put(key, Readable.from([Buffer.from("x")]), 1, { contentType: "x/y" }),
        ).rejects.toThrow(/invalid blob key/);
      }
      expect(files(parent.path)).toEqual([]);
    } finally {
      parent.remove();
    }
  });

  it("leaves no temp or orphaned data files after failed puts, overwrites and deletes", async () => {
    const dir = tempDir("blob-store");
    const store = createFileBlobStore({ dir: dir.path });
    try {
      const put = (key: string, text: string, size = text.length) =>
        store.put(key, Readable.from([Buffer.from(text)]), size, { contentType: "text/plain" });
      await put("a/b", "one");
      await put("a/b", "two!");
      await expect(put("a/b", "too long", 3)).rejects.toThrow();
      await expect(put("a/c", "short", 9)).rejects.toThrow();
      expect(files(dir.path)).toHaveLength(2); // one record + one data file for "a/b"
      await store.delete("a/b");
      expect(files(dir.path)).toEqual([]);
    } finally {
      dir.remove();
    }
  });
});
