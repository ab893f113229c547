import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { deserialize, serialize } from "node:v8";
import type { Document } from "./port.ts";

/**
 * Snapshot files of in-memory read models (docs/architecture.md, "Snapshots"): one file per
 * projection and version, `<projection>_v<version>.snapshot`, holding its collections' documents
 * (tombstones included) as they were after every event up to `position` and none after.
 *
 * Layout: frames of [u32 length][bytes]; the first is the header (JSON), each next one a chunk of
 * one collection's documents: a tag byte, then JSON ("J") when every value in the chunk survives
 * JSON unchanged (strings, finite numbers, booleans, null, arrays and plain objects: what
 * projections make of events; JSON.parse reads them in half the time of V8's deserialiser), else
 * V8 serialisation ("V", as structuredClone copies them); then the SHA-256
 * of everything before it. A file that is cut short, altered, of another format or of another
 * projection key fails a check and reads as no snapshot. It is written to a temporary file,
 * fsynced, renamed over the previous one and the directory fsynced: a crash at any moment leaves
 * the previous snapshot or the new one, whole.
 */

const FORMAT = "cheese-read-models-snapshot/2";
const JSON_CHUNK = 0x4a; // "J"
const V8_CHUNK = 0x56; // "V"
const CHUNK = 2_000;

export interface SnapshotHeader {
  format: typeof FORMAT;
  /** The projection's checkpoint key, `<name>_v<version>`. */
  projection: string;
  position: number;
  collections: { name: string; documents: number }[];
  takenAt: string;
}

export interface SnapshotContent {
  position: number;
  collections: Map<string, Document[]>;
}

export const snapshotFile = (dir: string, projection: string) => join(dir, `${projection}.snapshot`);

let written = 0;

/**
 * Writes the documents (captured by the caller: stored documents are never changed in place, so
 * the arrays of references stay the state at `position`) in chunks, yielding to the event loop
 * between them, so a large snapshot does not stall the requests the process serves meanwhile.
 */
export async function writeSnapshot(
  dir: string,
  projection: string,
  position: number,
  collections: { name: string; documents: Document[] }[],
): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const file = snapshotFile(dir, projection);
  const temporary = `${file}.${process.pid}.${++written}.tmp`;
  const handle = await open(temporary, "w");
  const hash = createHash("sha256");
  let ok = false;
  try {
    const frame = async (bytes: Uint8Array) => {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      hash.update(length);
      hash.update(bytes);
      await handle.write(length);
      await handle.write(bytes);
    };
    const header: SnapshotHeader = {
      format: FORMAT,
      projection,
      position,
      collections: collections.map(({ name, documents }) => ({ name, documents: documents.length })),
      takenAt: new Date().toISOString(),
    };
    await frame(Buffer.from(JSON.stringify(header), "utf8"));
    for (const { documents } of collections) {
      for (let from = 0; from < documents.length; from += CHUNK) {
        await frame(encodeChunk(documents.slice(from, from + CHUNK)));
      }
    }
    await handle.write(hash.digest());
    await handle.sync();
    ok = true;
  } finally {
    await handle.close();
    if (!ok) await rm(temporary, { force: true });
  }
  await rename(temporary, file);
  const directory = await open(dir, "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

function encodeChunk(documents: Document[]): Buffer {
  return jsonSafe(documents)
    ? Buffer.concat([Buffer.of(JSON_CHUNK), Buffer.from(JSON.stringify(documents), "utf8")])
    : Buffer.concat([Buffer.of(V8_CHUNK), serialize(documents)]);
}

function decodeChunk(frame: Buffer): Document[] {
  const body = frame.subarray(1);
  if (frame[0] === JSON_CHUNK) return JSON.parse(body.toString("utf8")) as Document[];
  if (frame[0] === V8_CHUNK) return deserialize(body) as Document[];
  throw new Error(`a chunk of unknown kind ${frame[0]}`);
}

/** Whether JSON gives `value` back equal: no undefined, -0, NaN, Date, Map, class instance... */
function jsonSafe(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0);
    case "object": {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !jsonSafe(value[i])) return false;
        return true;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) return false;
      for (const key in value) if (!jsonSafe((value as Record<string, unknown>)[key])) return false;
      return true;
    }
    default:
      return false;
  }
}

/** Why a snapshot file was not used, for the log; or its content. */
export type SnapshotRead = { content: SnapshotContent } | { ignored: string };

/** Reads and checks a projection's snapshot; `ignored` says why there is none to use. */
export async function readSnapshot(dir: string, projection: string): Promise<SnapshotRead> {
  let bytes: Buffer;
  try {
    bytes = await readFile(snapshotFile(dir, projection));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { ignored: "none" };
    throw error;
  }
  if (bytes.length < 32) return { ignored: "cut short" };
  const body = bytes.subarray(0, bytes.length - 32);
  if (
    !createHash("sha256")
      .update(body)
      .digest()
      .equals(bytes.subarray(bytes.length - 32))
  )
    return { ignored: "checksum mismatch (cut short or altered)" };
  try {
    let offset = 0;
    const next = () => {
      const length = body.readUInt32BE(offset);
      const frame = body.subarray(offset + 4, offset + 4 + length);
      if (frame.length !== length) throw new Error("frame past the end");
      offset += 4 + length;
      return frame;
    };
    const header = JSON.parse(next().toString("utf8")) as SnapshotHeader;
    if (header.format !== FORMAT) return { ignored: `format ${String(header.format)}` };
    if (header.projection !== projection) return { ignored: `written for ${String(header.projection)}` };
    if (!Number.isSafeInteger(header.position)) return { ignored: "no position" };
    const collections = new Map<string, Document[]>();
    for (const { name, documents: count } of header.collections) {
      const documents: Document[] = [];
      while (documents.length < count) {
        const chunk = decodeChunk(next());
        if (!Array.isArray(chunk) || chunk.length === 0) throw new Error("not a chunk of documents");
        for (const document of chunk) documents.push(document);
      }
      if (documents.length !== count) throw new Error(`${name}: ${documents.length} documents, not ${count}`);
      collections.set(name, documents);
    }
    if (offset !== body.length) throw new Error("bytes after the last chunk");
    return { content: { position: header.position, collections } };
  } catch (error) {
    return { ignored: `unreadable: ${(error as Error).message}` };
  }
}

/**
 * Removes the snapshot files of a projection's versions older than the previous one (as
 * defineProjection drops their collections), and temporary files left by a process that died
 * while writing one.
 */
export function tidySnapshots(dir: string, name: string, version: number): void {
  let files: string[];
  try {
    files = readdirSync(dir);
  } catch {
    return;
  }
  for (const file of files) {
    const match = /^(.*)_v(\d+)\.snapshot(?:\.(\d+)\.\d+\.tmp)?$/.exec(file);
    if (!match || match[1] !== name) continue;
    const dropped = Number(match[2]) < version - 1;
    const orphan = match[3] !== undefined && !alive(Number(match[3]));
    if (dropped || orphan) rmSync(join(dir, file), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
