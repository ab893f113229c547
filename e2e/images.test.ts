import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { crc32, deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, operatorToken } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * POST /cheeses/{cheeseId}/uploadImage over HTTP: limits refused before the body is read, the
 * format decided from the bytes and proven by decoding, thumbnails, and the image URLs served.
 */
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  system = await startSystem();
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

const MiB = 1024 * 1024;
const url = (path: string) => `${system.baseUrl}${path}`;
/** A 16×12 JPEG. */
const jpeg = Buffer.from(
  "/9j/2wBDAAoHBwgHBgoICAgLCgoLDhgQDg0NDh0VFhEYIx8lJCIfIiEmKzcvJik0KSEiMEExNDk7Pj4+JS5ESUM8SDc9Pjv/2wBDAQoLCw4NDhwQEBw7KCIoOzs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozv/wAARCAAMABADASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAX/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFAEBAAAAAAAAAAAAAAAAAAAABv/EABQRAQAAAAAAAAAAAAAAAAAAAAD/2gAMAwEAAhEDEQA/AKIA2QP/2Q==",
  "base64",
);

async function newCheese(name: string, photoUrls: string[] = []): Promise<{ id: number }> {
  const response = await fetch(url("/cheeses"), {
    method: "POST",
    headers: { "content-type": "application/json", ...auth.bearer },
    body: JSON.stringify({ name, photoUrls }),
  });
  expect(response.status).toBe(201);
  return json(response);
}

function upload(
  cheeseId: number,
  file: Buffer | undefined,
  fields: Record<string, string> = {},
  options: { filename?: string; type?: string; headers?: Record<string, string> } = {},
) {
  const form = new FormData();
  if (file) {
    form.set(
      "file",
      new Blob([file], { type: options.type ?? "application/octet-stream" }),
      options.filename ?? "photo",
    );
  }
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return fetch(url(`/cheeses/${cheeseId}/uploadImage`), {
    method: "POST",
    headers: options.headers ?? auth.bearer,
    body: form,
  });
}

async function bytes(response: Response): Promise<Buffer> {
  return Buffer.from(await response.arrayBuffer());
}

describe("uploading", () => {
  it("stores a PNG with a 256-pixel WebP thumbnail; both URLs serve the bytes with caching headers", async () => {
    const cheese = await newCheese("Photographed Cantal", ["https://example.com/cantal.jpg"]);
    const image = png(600, 300);
    const response = await upload(
      cheese.id,
      image,
      { caption: "Cantal entre-deux" },
      { filename: "x.gif", type: "image/gif" },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("etag")).toMatch(/^"\d+"$/);
    const result = await json(response);
    expect(Object.keys(result).sort()).toEqual(["imageUrl", "size", "thumbnailUrl"]);
    expect(result.size).toBe(image.length);
    expect(new URL(result.imageUrl).pathname).toMatch(/^\/v2\/images\//);

    // No credentials needed: these URLs go into <img> tags.
    const original = await fetch(result.imageUrl);
    expect(original.status).toBe(200);
    expect(original.headers.get("content-type")).toBe("image/png");
    expect(original.headers.get("cache-control")).toContain("immutable");
    const etag = original.headers.get("etag");
    expect(etag).toBeTruthy();
    expect((await bytes(original)).equals(image)).toBe(true);
    // (Further reads carry the operator's key only to stay clear of the anonymous rate limit.)
    const revalidated = await fetch(result.imageUrl, { headers: { ...auth.apiKey, "if-none-match": etag! } });
    expect(revalidated.status).toBe(304);

    const thumbnail = await fetch(result.thumbnailUrl, { headers: auth.apiKey });
    expect(thumbnail.status).toBe(200);
    expect(thumbnail.headers.get("content-type")).toBe("image/webp");
    expect(thumbnail.headers.get("cache-control")).toContain("immutable");
    expect(webpSize(await bytes(thumbnail))).toEqual({ width: 256, height: 128 });

    const after = await json(await fetch(url(`/cheeses/${cheese.id}`), { headers: auth.apiKey }));
    expect(after.photoUrls).toEqual(["https://example.com/cantal.jpg", result.imageUrl]);
  });

  it("puts a primary image first in photoUrls and keeps caption and isPrimary", async () => {
    const cheese = await newCheese("Primary Laguiole", ["https://example.com/laguiole.jpg"]);
    const first = await json(await upload(cheese.id, jpeg, { caption: "the wheel" }));
    const primary = await json(await upload(cheese.id, png(40, 40), { isPrimary: "true", caption: "cut" }));
    const second = await json(await upload(cheese.id, jpeg, { isPrimary: "false" }));

    const after = await json(await fetch(url(`/cheeses/${cheese.id}`), { headers: auth.apiKey }));
    expect(after.photoUrls).toEqual([
      primary.imageUrl,
      "https://example.com/laguiole.jpg",
      first.imageUrl,
      second.imageUrl,
    ]);
    const images = await json(await fetch(url(`/cheeses/${cheese.id}/images`), { headers: auth.apiKey }));
    expect(
      images.map((i: { caption: string | null; isPrimary: boolean }) => [i.caption, i.isPrimary]),
    ).toEqual([
      ["the wheel", false],
      ["cut", true],
      [null, false],
    ]);
    expect(images[0]).toMatchObject({
      imageUrl: first.imageUrl,
      contentType: "image/jpeg",
      width: 16,
      height: 12,
    });
  });

  it("refuses an upload to a cheese that has 50 photoUrls (409), so the cheese read back can be PUT as it is", async () => {
    const full = Array.from({ length: 49 }, (_, i) => `https://example.com/full/${i}.jpg`);
    const cheese = await newCheese("Full Reblochon", full);
    expect((await upload(cheese.id, jpeg)).status).toBe(200);
    const refused = await upload(cheese.id, png(40, 40), { isPrimary: "true" });
    expect(refused.status).toBe(409);
    expect(await json(refused)).toMatchObject({ code: 409, type: "conflict" });
    const after = await json(await fetch(url(`/cheeses/${cheese.id}`), { headers: auth.apiKey }));
    expect(after.photoUrls).toHaveLength(50);
    const put = await fetch(url("/cheeses"), {
      method: "PUT",
      headers: { "content-type": "application/json", ...auth.bearer },
      body: JSON.stringify(after),
    });
    expect(put.status).toBe(200);
  });

  it("accepts WebP and a file of exactly 10 MB, decided from the bytes; the 10 MB never crosses NATS", async () => {
    const cheese = await newCheese("Formats Fourme");
    const fromPng = await json(await upload(cheese.id, png(64, 64)));
    const webp = await bytes(await fetch(fromPng.thumbnailUrl, { headers: auth.apiKey }));
    const asWebp = await upload(cheese.id, webp, {}, { filename: "cheese.png", type: "image/png" });
    expect(asWebp.status).toBe(200);
    const served = await fetch((await json(asWebp)).imageUrl, { headers: auth.apiKey });
    expect(served.headers.get("content-type")).toBe("image/webp");

    // NATS carries at most 1 MB per message: a 10 MB upload succeeding shows the bytes went
    // through the blob store, not the bus.
    const big = png(300, 200, 10 * MiB);
    const response = await upload(cheese.id, big);
    expect(response.status).toBe(200);
    expect((await json(response)).size).toBe(10 * MiB);
  });
});

describe("refusals", () => {
  it("refuses what is not JPEG, PNG or WebP by its bytes (415), whatever the name and type say", async () => {
    const cheese = await newCheese("Refused Roquefort");
    const gif = Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64");
    const cases: [string, Buffer][] = [
      ["text named .png", Buffer.from("definitely not an image")],
      ["a GIF", gif],
      ["PNG magic then garbage", Buffer.concat([png(8, 8).subarray(0, 16), Buffer.alloc(2000, 7)])],
      ["a truncated JPEG", jpeg.subarray(0, 180)],
      ["an empty file", Buffer.alloc(0)],
    ];
    for (const [what, file] of cases) {
      const response = await upload(cheese.id, file, {}, { filename: "cheese.png", type: "image/png" });
      expect(response.status, what).toBe(415);
      expect(await json(response)).toMatchObject({ code: 415, type: "unsupported_media_type" });
    }
    const after = await json(await fetch(url(`/cheeses/${cheese.id}`), { headers: auth.apiKey }));
    expect(after.photoUrls).toEqual([]);
  });

  it("refuses a decompression bomb (a small file of 400 megapixels)", async () => {
    const cheese = await newCheese("Bomb Bleu");
    const bomb = pngBomb(20_000, 20_000);
    expect(bomb.length).toBeLessThan(MiB);
    const response = await upload(cheese.id, bomb);
    expect(response.status).toBe(413);
    expect(await json(response)).toMatchObject({ code: 413, type: "payload_too_large" });
  });

  it("refuses a file over 10 MB with 413, even inside a body the size check let through", async () => {
    const cheese = await newCheese("Heavy Emmental");
    const response = await upload(cheese.id, png(300, 200, 10 * MiB + 1));
    expect(response.status).toBe(413);
    expect(await json(response)).toMatchObject({ code: 413, type: "payload_too_large" });
  });

  it("answers 422 without a file, 415 for a body that is not multipart, 404 for an unknown cheese", async () => {
    const cheese = await newCheese("Picky Pecorino");
    const missing = await upload(cheese.id, undefined, { caption: "no file" });
    expect(missing.status).toBe(422);
    expect((await json(missing)).errors).toContainEqual({ field: "file", message: "required" });
    const badFlag = await upload(cheese.id, jpeg, { isPrimary: "perhaps" });
    expect(badFlag.status).toBe(422);

    const notMultipart = await fetch(url(`/cheeses/${cheese.id}/uploadImage`), {
      method: "POST",
      headers: { "content-type": "application/json", ...auth.bearer },
      body: JSON.stringify({ file: "aGVsbG8=" }),
    });
    expect(notMultipart.status).toBe(415);
    expect((await upload(987654321, jpeg)).status).toBe(404);
    const unknownImage = await fetch(url("/images/00000000-0000-0000-0000-000000000000.png"), {
      headers: auth.apiKey,
    });
    expect(unknownImage.status).toBe(404);
  });

  it("needs write:cheeses", async () => {
    const cheese = await newCheese("Guarded Gruyère");
    expect((await upload(cheese.id, jpeg, {}, { headers: {} })).status).toBe(401);
    const reader = { authorization: `Bearer ${await operatorToken(system, "read:cheeses")}` };
    expect((await upload(cheese.id, jpeg, {}, { headers: reader })).status).toBe(403);
  });
});

describe("oversized uploads are refused without reading them", () => {
  const rss = () => {
    const [pid] = system.pids().gateway ?? [];
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
  };

  for (const [label, declared] of [
    ["11 MB", 11 * MiB],
    ["1 GB", 1024 * MiB],
  ] as const) {
    it(`answers 413 to a declared ${label} at once, and the gateway's memory stays flat`, async () => {
      const cheese = await newCheese(`Declared ${label}`);
      const before = rss();
      // Only the first 256 KB are sent: a gateway that waited for the rest would never answer.
      const outcome = await rawUpload(cheese.id, { contentLength: declared, sendUpTo: 256 * 1024 });
      expect(outcome.status).toBe(413);
      expect(JSON.parse(outcome.body)).toMatchObject({ code: 413, type: "payload_too_large" });
      expect(rss() - before).toBeLessThan(40 * MiB);
    });
  }

  it("stops reading a chunked upload once it passes 10 MB", async () => {
    const cheese = await newCheese("Chunked Cheddar");
    const before = rss();
    // A gateway that buffered the body would take all 200 MB (and grow by as much).
    const outcome = await rawUpload(cheese.id, { sendUpTo: 200 * MiB });
    expect(outcome.status).toBe(413);
    // The rest of the body was not read: the connection cannot carry another request.
    expect(outcome.head).toMatch(/^connection: close$/im);
    expect(outcome.sentBeforeAnswer).toBeLessThan(40 * MiB);
    expect(rss() - before).toBeLessThan(60 * MiB);
  });

  it("answers 413 to a client that reads nothing until it has sent 30 MB of a chunked upload", async () => {
    // A busy client (or one that reads only once its body is out) finds the 413 waiting: the
    // gateway stops taking the body at 10 MB and closes without a reset that would destroy the
    // answer unread.
    const cheese = await newCheese("Deaf Double Gloucester");
    const outcome = await rawUpload(cheese.id, { sendUpTo: 30 * MiB, readAfterSending: true });
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.body)).toMatchObject({ code: 413, type: "payload_too_large" });
  });

  it("answers 413 to a client that goes quiet for 3 s past the limit, then sends more before it reads", async () => {
    // The gateway lingers 5 s after its 413 (docs/api.md). A client whose bytes came after it
    // had closed would meet a reset, which destroys the 413 still unread: a busy client, or one
    // on a loaded machine, would read a reset instead of its answer.
    const cheese = await newCheese("Quiet Quark");
    const outcome = await rawUpload(cheese.id, {
      sendUpTo: 14 * MiB,
      readAfterSending: true,
      quietAt: { bytes: 12 * MiB, ms: 3_000 },
    });
    expect(outcome.status).toBe(413);
    expect(JSON.parse(outcome.body)).toMatchObject({ code: 413, type: "payload_too_large" });
  });
});

/**
 * Sends a multipart upload over a raw socket: the request head (with Content-Length when
 * given, else chunked), then filler bytes in 64 KB chunks until the first response bytes
 * arrive or `sendUpTo` bytes went out, then reads the response until the server closes.
 * With `readAfterSending`, nothing is read (the socket is paused) until `sendUpTo` went out.
 * With `quietAt`, the sending pauses once, as a client busy elsewhere would.
 */
function rawUpload(
  cheeseId: number,
  options: {
    contentLength?: number;
    sendUpTo: number;
    readAfterSending?: boolean;
    /** Once `bytes` went out, sends nothing for `ms`, then goes on. */
    quietAt?: { bytes: number; ms: number };
  },
): Promise<{ status: number; head: string; body: string; sentBeforeAnswer: number }> {
  const target = new URL(url(`/cheeses/${cheeseId}/uploadImage`));
  const boundary = "----cheese-boundary";
  const chunked = options.contentLength === undefined;
  const head = [
    `POST ${target.pathname} HTTP/1.1`,
    `Host: ${target.host}`,
    `Authorization: ${auth.bearer.authorization}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`,
    chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${options.contentLength}`,
    "",
    "",
  ].join("\r\n");
  const partHead = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n` +
      "Content-Type: image/png\r\n\r\n",
  );
  const filler = Buffer.alloc(64 * 1024, 0x41);
  const frame = (data: Buffer) =>
    chunked
      ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")])
      : data;

  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let sent = 0;
    let answeredAt: number | undefined;
    const received: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer after sending ${sent} bytes`));
    }, 20_000);
    socket.on("data", (data: Buffer) => {
      answeredAt ??= sent;
      received.push(data);
    });
    // Writes racing the server's close may fail; what matters is the answer read.
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(received).toString("latin1");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({
        status,
        head: text.slice(0, text.indexOf("\r\n\r\n")),
        body: text.slice(text.indexOf("\r\n\r\n") + 4),
        sentBeforeAnswer: answeredAt ?? sent,
      });
    });
    if (options.readAfterSending) socket.pause();
    let quiet = options.quietAt;
    const pump = () => {
      while (answeredAt === undefined && !socket.destroyed && sent < options.sendUpTo) {
        if (quiet && sent >= quiet.bytes) {
          setTimeout(pump, quiet.ms);
          quiet = undefined;
          return;
        }
        const piece = sent === 0 ? partHead : filler;
        sent += piece.length;
        if (!socket.write(frame(piece))) {
          socket.once("drain", pump);
          return;
        }
      }
      if (sent >= options.sendUpTo) socket.resume();
    };
    socket.write(head);
    pump();
  });
}

/** An RGB PNG with a gradient; padded with a private ancillary chunk to exactly `size` bytes when given. */
function png(width: number, height: number, size?: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const stride = 1 + width * 3;
  const rows = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      rows.set([(x * 255) / width, (y * 255) / height, 128], y * stride + 1 + x * 3);
    }
  }
  const parts = [PNG_SIGNATURE, pngChunk("IHDR", header), pngChunk("IDAT", deflateSync(rows))];
  const end = pngChunk("IEND", Buffer.alloc(0));
  if (size !== undefined) {
    const used = parts.reduce((sum, part) => sum + part.length, 0) + end.length + 12;
    parts.push(pngChunk("prVt", Buffer.alloc(size - used)));
  }
  return Buffer.concat([...parts, end]);
}

/** A valid 1-bit grayscale PNG: tiny on the wire, width × height pixels once decoded. */
function pngBomb(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([1, 0, 0, 0, 0], 8);
  const rows = Buffer.alloc((1 + Math.ceil(width / 8)) * height);
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(rows, { level: 9 })),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** Width and height from a WebP header (lossy, lossless or extended). */
function webpSize(file: Buffer): { width: number; height: number } {
  expect(file.subarray(0, 4).toString("latin1")).toBe("RIFF");
  expect(file.subarray(8, 12).toString("latin1")).toBe("WEBP");
  const kind = file.subarray(12, 16).toString("latin1");
  if (kind === "VP8 ")
    return { width: file.readUInt16LE(26) & 0x3fff, height: file.readUInt16LE(28) & 0x3fff };
  if (kind === "VP8L") {
    const bits = file.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  return { width: file.readUIntLE(24, 3) + 1, height: file.readUIntLE(27, 3) + 1 };
}
