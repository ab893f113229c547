import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { crc32, deflateSync } from "node:zlib";
import { type BlobStore, createFileBlobStore } from "@cheese/blob-store";
import { type CheeseFields, catalogueEvents, catalogueRpc, orderingRpc } from "@cheese/contracts";
import { createSqliteEventStore } from "@cheese/event-store";
import {
  type Closable,
  callRpc,
  consumeEvents,
  createInProcessBroker,
  type InProcessBroker,
  type MessageBus,
  RemoteError,
  type RpcDefinition,
  serveRpc,
} from "@cheese/messaging";
import { createLogger, type RunningService } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { start } from "../src/main.ts";

/**
 * The catalogue service over an in-process bus with its real stores: name uniqueness under
 * races and moves, deletion asking ordering, the events it publishes, and image processing.
 */
let broker: InProcessBroker;
let client: MessageBus;
let service: RunningService;
let blobs: BlobStore;
const dir = tempDir("catalogue-service");

beforeAll(async () => {
  broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  client = broker.connect();
  service = await start({
    env: { DATA_DIR: dir.path, LOG_LEVEL: "silent", RPC_TIMEOUT: "1s" },
    bus: broker.connect(),
    logger: createLogger("catalogue", "silent"),
  });
  blobs = createFileBlobStore({ dir: `${dir.path}/blobs` });
});

afterAll(async () => {
  await service?.stop();
  await client?.close();
  dir.remove();
});

function call<Req extends z.ZodType, Res extends z.ZodType>(
  rpc: RpcDefinition<Req, Res>,
  payload: z.input<Req>,
): Promise<z.output<Res>> {
  return callRpc(client, rpc, payload, { timeoutMs: 5000 });
}

const fields = (name: string, extra: Partial<CheeseFields> = {}): CheeseFields => ({
  name,
  status: "available",
  organic: false,
  ...extra,
});

async function refusal(promise: Promise<unknown>): Promise<{ status: number; type: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the call should have been refused").toBeInstanceOf(RemoteError);
  return (error as RemoteError).body;
}

/** Serves ordering's question with a fixed answer, as ordering would. */
function orderingAnswers(activeOrders: number): Closable {
  return serveRpc(broker.connect(), orderingRpc.activeOrdersForCheese, { queue: "ordering" }, async () => ({
    activeOrders,
  }));
}

describe("name uniqueness within a category", () => {
  it("lets exactly one of many concurrent creates of one name win", async () => {
    const attempts = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        call(catalogueRpc.createCheese, {
          fields: fields(i % 2 ? "Race Cheese" : "RACE cheese", { category: { name: "Racing" } }),
        }),
      ),
    );
    expect(attempts.filter((a) => a.status === "fulfilled")).toHaveLength(1);
    for (const attempt of attempts.filter((a) => a.status === "rejected")) {
      expect((attempt as PromiseRejectedResult).reason.body).toMatchObject({ status: 409, type: "conflict" });
    }
  });

  it("moves the reservation on PUT: the new name is refused when taken, the old one freed", async () => {
    const gouda = await call(catalogueRpc.createCheese, {
      fields: fields("Gouda", { category: { name: "Dutch" } }),
    });
    await call(catalogueRpc.createCheese, { fields: fields("Edam", { category: { name: "Dutch" } }) });

    const taken = call(catalogueRpc.replaceCheese, {
      cheeseId: gouda.cheese.id,
      fields: fields("edam", { category: { name: "dutch" } }),
    });
    expect(await refusal(taken)).toMatchObject({ status: 409 });

    await call(catalogueRpc.replaceCheese, {
      cheeseId: gouda.cheese.id,
      fields: fields("Old Gouda", { category: { name: "Dutch" } }),
    });
    const reused = await call(catalogueRpc.createCheese, {
      fields: fields("Gouda", { category: { name: "Dutch" } }),
    });
    expect(reused.cheese.name).toBe("Gouda");
  });

  it("moves the reservation on a partial update, also across categories", async () => {
    const stilton = await call(catalogueRpc.createCheese, {
      fields: fields("Stilton", { category: { name: "Blue" } }),
    });
    await call(catalogueRpc.createCheese, { fields: fields("Stilton", { category: { name: "English" } }) });
    const clash = call(catalogueRpc.updateCheese, {
      cheeseId: stilton.cheese.id,
      changes: { category: { name: "English" } },
    });
    expect(await refusal(clash)).toMatchObject({ status: 409 });

    const renamed = await call(catalogueRpc.updateCheese, {
      cheeseId: stilton.cheese.id,
      changes: { name: "STILTON" },
    });
    expect(renamed.cheese.name).toBe("STILTON");
    expect(renamed.revision).toBe(stilton.revision + 1);
  });
});

describe("lists and the get answer every cheese as it stands (their texts kept per version)", () => {
  it("shows each change and a deletion on the next get, page and search, never the text of before", async () => {
    const category = { name: "Kept Texts" };
    const page = () =>
      call(catalogueRpc.listCheeses, { limit: 10, sort: "name", filters: { category: "kept texts" } });
    const byTag = () => call(catalogueRpc.findCheeses, { tags: ["kept-texts"] });
    const tags = [{ name: "kept-texts" }];
    const tomme = await call(catalogueRpc.createCheese, { fields: fields("Tomme", { category, tags }) });
    const morbier = await call(catalogueRpc.createCheese, { fields: fields("Morbier", { category, tags }) });
    expect((await page()).items).toEqual([morbier.cheese, tomme.cheese]);
    expect((await byTag()).items).toEqual([tomme.cheese, morbier.cheese]);

    for (let change = 1; change <= 3; change++) {
      const changed = await call(catalogueRpc.updateCheese, {
        cheeseId: tomme.cheese.id,
        changes: { name: `Tomme ${change}`, pricePerKg: change, status: change % 2 ? "sold" : "available" },
      });
      // The get first (it makes the new version's text) on odd changes, the pages first on even ones.
      const get = () => call(catalogueRpc.getCheese, { cheeseId: tomme.cheese.id });
      if (change % 2) expect(await get()).toEqual(changed);
      const listed = await page();
      expect(listed.items).toEqual([morbier.cheese, changed.cheese]);
      expect(listed).toMatchObject({ total: 2, hasMore: false, nextCursor: null });
      expect((await byTag()).items).toEqual([changed.cheese, morbier.cheese]);
      expect(await get()).toEqual(changed);
    }

    const ordering = orderingAnswers(0);
    try {
      await call(catalogueRpc.deleteCheese, { cheeseId: morbier.cheese.id, confirmed: true });
    } finally {
      await ordering.close();
    }
    expect((await page()).items.map((cheese) => cheese.id)).toEqual([tomme.cheese.id]);
    expect((await byTag()).items.map((cheese) => cheese.id)).toEqual([tomme.cheese.id]);
    expect(await refusal(call(catalogueRpc.getCheese, { cheeseId: morbier.cheese.id }))).toMatchObject({
      status: 404,
    });
  });
});

describe("Idempotency-Key on create (the gateway passes the scoped key down)", () => {
  const scoped = (label: string) => ({
    key: createHash("sha256").update(`op:test\n${label}-${Math.random()}`).digest("hex"),
    fingerprint: createHash("sha256").update(label).digest("hex"),
  });
  const withTag = (tag: string) => call(catalogueRpc.findCheeses, { tags: [tag] });

  it("answers a retry after the gateway gave up with the cheese first created, and creates one", async () => {
    const idempotency = scoped("retry");
    const body = fields("Retried Reblochon", { tags: [{ name: "retry-tag" }], pricePerKg: 21 });
    // The first call's caller stops waiting at once, as the gateway does on its deadline (503);
    // the catalogue still creates the cheese.
    await callRpc(client, catalogueRpc.createCheese, { fields: body, idempotency }, { timeoutMs: 1 }).catch(
      () => {},
    );
    const retry = await call(catalogueRpc.createCheese, { fields: body, idempotency });
    expect(retry.revision).toBe(0);
    // A later repeat still answers with the cheese as first created, whatever happened since.
    await call(catalogueRpc.updateCheese, { cheeseId: retry.cheese.id, changes: { pricePerKg: 22 } });
    const again = await call(catalogueRpc.createCheese, { fields: body, idempotency });
    expect(again).toEqual({ ...retry, replayed: true });
    expect(retry.cheese).toMatchObject({ name: "Retried Reblochon", pricePerKg: 21 });
    expect((await withTag("retry-tag")).items.map((c) => c.id)).toEqual([retry.cheese.id]);
    // Without the key the name is simply taken.
    expect(await refusal(call(catalogueRpc.createCheese, { fields: body }))).toMatchObject({ status: 409 });
  });

  it("refuses the same key with another body (409) and creates nothing more", async () => {
    const idempotency = scoped("other-body");
    const first = await call(catalogueRpc.createCheese, {
      fields: fields("Keyed Comté", { tags: [{ name: "keyed-tag" }] }),
      idempotency,
    });
    const other = call(catalogueRpc.createCheese, {
      fields: fields("Keyed Beaufort", { tags: [{ name: "keyed-tag" }] }),
      idempotency: { ...idempotency, fingerprint: scoped("another body").fingerprint },
    });
    expect(await refusal(other)).toMatchObject({ status: 409, type: "conflict" });
    expect((await withTag("keyed-tag")).items.map((c) => c.id)).toEqual([first.cheese.id]);
  });

  it("makes concurrent repeats of one key create one cheese, and all answer with it", async () => {
    const idempotency = scoped("concurrent");
    const body = fields("Concurrent Cantal", { tags: [{ name: "concurrent-tag" }] });
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => call(catalogueRpc.createCheese, { fields: body, idempotency })),
    );
    const [first, ...repeats] = [...answers].sort(
      (a, b) => Number(a.replayed ?? false) - Number(b.replayed ?? false),
    );
    expect(first!.replayed).toBeUndefined();
    for (const answer of repeats) expect(answer).toEqual({ ...first, replayed: true });
    expect((await withTag("concurrent-tag")).items.map((c) => c.id)).toEqual([answers[0]!.cheese.id]);
  });

  it("takes over a claim whose request never created the cheese, under the claimed id", async () => {
    const idempotency = scoped("takeover");
    const claimedId = 2 ** 40 + Math.floor(Math.random() * 1000);
    const store = createSqliteEventStore({ file: `${dir.path}/catalogue/events.sqlite` });
    try {
      await store.append(
        `cheeserequest-${idempotency.key}`,
        [
          {
            type: "CheeseRequestClaimed",
            data: {
              cheeseId: claimedId,
              fingerprint: idempotency.fingerprint,
              claimedAt: new Date(Date.now() - 60_000).toISOString(),
            },
          },
        ],
        { expectedRevision: "no_stream" },
      );
    } finally {
      await store.close();
    }
    const body = fields("Orphaned Ossau", { tags: [{ name: "takeover-tag" }] });
    const created = await call(catalogueRpc.createCheese, { fields: body, idempotency });
    expect(created.cheese.id).toBe(claimedId);
    expect(await call(catalogueRpc.createCheese, { fields: body, idempotency })).toEqual({
      ...created,
      replayed: true,
    });
    expect((await withTag("takeover-tag")).items.map((c) => c.id)).toEqual([claimedId]);
  });
});

describe("deletion asks ordering", () => {
  it("deletes nothing when ordering does not answer (503)", async () => {
    const { cheese } = await call(catalogueRpc.createCheese, { fields: fields("Unasked Brie") });
    const attempt = call(catalogueRpc.deleteCheese, { cheeseId: cheese.id, confirmed: true });
    expect(await refusal(attempt)).toMatchObject({ status: 503, type: "service_unavailable" });
    expect((await call(catalogueRpc.getCheese, { cheeseId: cheese.id })).cheese.id).toBe(cheese.id);
  });

  it("refuses with 409 while ordering reports approved or shipped orders", async () => {
    const { cheese } = await call(catalogueRpc.createCheese, { fields: fields("Busy Brie") });
    const ordering = orderingAnswers(2);
    try {
      const attempt = call(catalogueRpc.deleteCheese, { cheeseId: cheese.id, confirmed: true });
      expect(await refusal(attempt)).toMatchObject({ status: 409, type: "conflict" });
      expect((await call(catalogueRpc.getCheese, { cheeseId: cheese.id })).cheese.id).toBe(cheese.id);
    } finally {
      await ordering.close();
    }
  });

  it("deletes, frees the name and tells everyone with cheese.deleted", async () => {
    const seen: unknown[] = [];
    const consumer = consumeEvents(broker.connect(), {
      durable: "test-deleted",
      events: [catalogueEvents.cheeseDeleted],
      handler: async (event) => {
        seen.push(event.payload);
      },
      onInvalid: () => {},
    });
    const { cheese } = await call(catalogueRpc.createCheese, { fields: fields("Doomed Brie") });
    const ordering = orderingAnswers(0);
    try {
      expect(await call(catalogueRpc.deleteCheese, { cheeseId: cheese.id, confirmed: true })).toEqual({
        deleted: true,
      });
    } finally {
      await ordering.close();
    }
    expect(await refusal(call(catalogueRpc.getCheese, { cheeseId: cheese.id }))).toMatchObject({
      status: 404,
    });
    await call(catalogueRpc.createCheese, { fields: fields("Doomed Brie") });
    await expect
      .poll(() => seen, { timeout: 5000 })
      .toContainEqual({ cheeseId: cheese.id, name: "Doomed Brie" });
    await consumer.close();
  });
});

describe("integration events", () => {
  it("publishes cheese.added, and cheese.status_changed with both ends for each status move", async () => {
    const seen: { subject: string; payload: Record<string, unknown> }[] = [];
    const consumer = consumeEvents(broker.connect(), {
      durable: "test-status",
      events: [
        catalogueEvents.cheeseAdded,
        catalogueEvents.cheeseStatusChanged,
        catalogueEvents.cheeseUpdated,
      ],
      handler: async (event) => {
        seen.push({ subject: event.subject, payload: event.payload as Record<string, unknown> });
      },
      onInvalid: (_, error) => {
        throw error;
      },
    });
    const { cheese } = await call(catalogueRpc.createCheese, { fields: fields("Mover") });
    for (const status of ["sold", "pending", "available"] as const) {
      await call(catalogueRpc.updateCheese, { cheeseId: cheese.id, changes: { status } });
    }
    await call(catalogueRpc.updateCheese, { cheeseId: cheese.id, changes: { pricePerKg: 12 } });
    const mine = () => seen.filter((e) => (e.payload.cheese as { id: number }).id === cheese.id);
    await expect.poll(() => mine().length, { timeout: 5000 }).toBe(5);
    expect(mine().map((e) => [e.subject, e.payload.from, e.payload.to])).toEqual([
      ["events.catalogue.cheese.added", undefined, undefined],
      ["events.catalogue.cheese.status_changed", "available", "sold"],
      ["events.catalogue.cheese.status_changed", "sold", "pending"],
      ["events.catalogue.cheese.status_changed", "pending", "available"],
      ["events.catalogue.cheese.updated", undefined, undefined],
    ]);
    expect(mine()[4]!.payload.cheese).toMatchObject({ pricePerKg: 12, status: "available" });
    await consumer.close();
  });
});

describe("images", () => {
  async function stored(key: string, bytes: Buffer) {
    await blobs.put(key, Readable.from([bytes]), bytes.length, { contentType: "application/octet-stream" });
  }
  const request = (cheeseId: number, id: string, format: "png" | "jpeg" | "webp", size: number) => ({
    cheeseId,
    originalKey: `images/${id}.${format}`,
    thumbnailKey: `images/${id}.thumb.webp`,
    format,
    size,
    imageUrl: `http://gw/v2/images/${id}.${format}`,
    thumbnailUrl: `http://gw/v2/images/${id}.thumb.webp`,
    caption: "rind detail",
    isPrimary: true,
  });

  it("writes a 256-pixel WebP thumbnail and records the image", async () => {
    const { cheese } = await call(catalogueRpc.createCheese, {
      fields: fields("Pictured", { photoUrls: ["https://example.com/a.jpg"] }),
    });
    const png = await sharp({ create: { width: 800, height: 400, channels: 3, background: "#fc0" } })
      .png()
      .toBuffer();
    await stored("images/one.png", png);
    const result = await call(catalogueRpc.attachImage, request(cheese.id, "one", "png", png.length));
    expect(result.image).toMatchObject({ width: 800, height: 400, caption: "rind detail", isPrimary: true });

    const thumbnail = await blobs.get("images/one.thumb.webp");
    const chunks: Buffer[] = [];
    for await (const chunk of thumbnail!.body) chunks.push(chunk as Buffer);
    const meta = await sharp(Buffer.concat(chunks)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["webp", 256, 128]);

    const { cheese: after } = await call(catalogueRpc.getCheese, { cheeseId: cheese.id });
    expect(after.photoUrls).toEqual(["http://gw/v2/images/one.png", "https://example.com/a.jpg"]);
  });

  it("refuses bytes that do not decode (415) and removes them from storage", async () => {
    const { cheese } = await call(catalogueRpc.createCheese, { fields: fields("Broken") });
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#000" } })
      .png()
      .toBuffer();
    const truncated = png.subarray(0, png.length - 40);
    await stored("images/broken.png", truncated);
    const attempt = call(catalogueRpc.attachImage, request(cheese.id, "broken", "png", truncated.length));
    expect(await refusal(attempt)).toMatchObject({ status: 415, type: "unsupported_media_type" });
    expect(await blobs.stat("images/broken.png")).toBeUndefined();
  });

  it("refuses a decompression bomb from its header, before decoding it", async () => {
    const { cheese } = await call(catalogueRpc.createCheese, { fields: fields("Bomb") });
    const bomb = pngBomb(20_000, 20_000);
    expect(bomb.length).toBeLessThan(1024 * 1024);
    await stored("images/bomb.png", bomb);
    const attempt = call(catalogueRpc.attachImage, request(cheese.id, "bomb", "png", bomb.length));
    expect(await refusal(attempt)).toMatchObject({ status: 413 });
  });
});

/** A valid 1-bit grayscale PNG of width × height black pixels: tiny on disk, 400 MB decoded at 20k². */
function pngBomb(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([1, 0, 0, 0, 0], 8); // bit depth 1, grayscale, deflate, no filter, no interlace
  const rows = Buffer.alloc((1 + Math.ceil(width / 8)) * height); // filter byte 0 + zero bits per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows, { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
