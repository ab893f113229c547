import type { Hash } from "node:crypto";
import { Transform } from "node:stream";

/** The body yielded more or fewer bytes than the size declared to `put`. */
export class BlobSizeMismatchError extends Error {
  constructor(
    readonly expected: number,
    readonly actual: number,
    readonly exceeded: boolean,
  ) {
    super(`blob body ${exceeded ? "exceeds" : "has"} ${actual} bytes, expected exactly ${expected}`);
    this.name = "BlobSizeMismatchError";
  }
}

/**
 * A pass-through that enforces the exact-size contract: it fails on the first chunk that
 * goes past `size` (so an oversized or endless body is not read further) and at the end if
 * fewer bytes came. It optionally feeds a hash on the way.
 */
export function exactSize(size: number, hash?: Hash): Transform {
  let count = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      count += chunk.length;
      if (count > size) return callback(new BlobSizeMismatchError(size, count, true));
      hash?.update(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      callback(count === size ? null : new BlobSizeMismatchError(size, count, false));
    },
  });
}
