import { createHash, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { access, mkdir, open, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { exactSize } from "./exact-size.ts";
import { type BlobInfo, type BlobStore, BlobStoreUnavailableError } from "./port.ts";
import { assertValidKey, assertValidPut } from "./validation.ts";

/**
 * On-disk layout under `dir` (one filesystem, so every rename is atomic):
 *   blobs/<h:2>/<h>.json        the record: BlobInfo + the name of its data file; the commit point
 *   blobs/<h:2>/<h>.<random>    the bytes of one version
 *   tmp/                        in-flight writes, renamed into blobs/ once complete and synced
 * where h = sha256(key). Hashing the key, rather than mapping it to a path, keeps arbitrary
 * S3-style keys storable: no segment length limit, and "a" and "a/b" can coexist.
 * Each put writes a fresh data file and then swaps the record, so a reader always gets bytes
 * and info of the same version, and an open stream survives an overwrite or delete.
 * `dir` plays the bucket's part: made once here, never again; if it goes (a volume no longer
 * mounted), operations fail with BlobStoreUnavailableError rather than finding nothing.
 */
export function createFileBlobStore(options: { dir: string }): BlobStore {
  const blobsDir = join(options.dir, "blobs");
  const tmpDir = join(options.dir, "tmp");
  mkdirSync(options.dir, { recursive: true });

  /** Throws when the store's directory is gone: a missing key must not hide a missing store. */
  const assertRoot = async () => {
    try {
      await access(options.dir);
    } catch (error) {
      throw new BlobStoreUnavailableError(`the blob directory ${options.dir} is missing`, { cause: error });
    }
  };

  const locate = (key: string) => {
    const hash = createHash("sha256").update(key).digest("hex");
    const shard = join(blobsDir, hash.slice(0, 2));
    return {
      shard,
      record: join(shard, `${hash}.json`),
      data: (file: string) => join(shard, `${hash}.${file}`),
    };
  };

  async function readRecord(key: string): Promise<StoredRecord | undefined> {
    try {
      return JSON.parse(await readFile(locate(key).record, "utf8")) as StoredRecord;
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await assertRoot();
      return undefined;
    }
  }

  const tempPath = () => join(tmpDir, randomBytes(16).toString("hex"));

  return {
    async put(key, body, size, putOptions) {
      assertValidPut(key, size, putOptions);
      const paths = locate(key);
      const file = randomBytes(8).toString("hex");
      const hash = createHash("md5");
      const temp = tempPath();
      await assertRoot().catch((error: unknown) => {
        body.destroy();
        throw error;
      });
      await mkdir(tmpDir, { recursive: true });
      try {
        // Opened before streaming: a stream opening lazily could create the file after a
        // failure's cleanup already ran. flush: fsync before close, so the renamed file never
        // turns out empty after a crash.
        const out = (await open(temp, "wx")).createWriteStream({ flush: true });
        await pipeline(body, exactSize(size, hash), out);
        await mkdir(paths.shard, { recursive: true });
        await rename(temp, paths.data(file));
      } catch (error) {
        body.destroy();
        await rm(temp, { force: true });
        throw error;
      }
      const info: BlobInfo = {
        key,
        size,
        contentType: putOptions.contentType,
        etag: hash.digest("hex"),
        // Whole seconds, as S3 reports them, so both adapters agree on HTTP dates.
        lastModified: new Date(Math.floor(Date.now() / 1000) * 1000),
        metadata: { ...putOptions.metadata },
      };
      const previous = await readRecord(key);
      try {
        await writeFileAtomically(paths.record, JSON.stringify({ ...info, file }), tempPath());
      } catch (error) {
        await rm(paths.data(file), { force: true });
        throw error;
      }
      // Readers that already opened the old version keep their file descriptor.
      if (previous && previous.file !== file) await rm(paths.data(previous.file), { force: true });
      return info;
    },

    async get(key) {
      assertValidKey(key);
      // A concurrent put or delete can remove the data file between reading the record and
      // opening it; the record read next time then points to the current version (or none).
      for (let attempt = 0; attempt < 5; attempt++) {
        const record = await readRecord(key);
        if (!record) return undefined;
        try {
          const handle = await open(locate(key).data(record.file), "r");
          return { info: toInfo(record), body: handle.createReadStream() };
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }
      return undefined;
    },

    async stat(key) {
      assertValidKey(key);
      const record = await readRecord(key);
      return record && toInfo(record);
    },

    async delete(key) {
      assertValidKey(key);
      const record = await readRecord(key);
      if (!record) return;
      const paths = locate(key);
      await rm(paths.record, { force: true });
      await rm(paths.data(record.file), { force: true });
    },

    async ping() {
      try {
        await assertRoot();
        await mkdir(tmpDir, { recursive: true });
        return true;
      } catch {
        return false;
      }
    },

    async close() {},
  };
}

type StoredRecord = Omit<BlobInfo, "lastModified"> & { lastModified: string; file: string };

function toInfo({ file: _file, lastModified, ...rest }: StoredRecord): BlobInfo {
  return { ...rest, lastModified: new Date(lastModified) };
}

async function writeFileAtomically(path: string, content: string, temp: string): Promise<void> {
  try {
    await writeFile(temp, content, { flag: "wx", flush: true });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "ENOENT";
}
