import { type CallOptions, callRpc, defineRpc, type MessageBus, RemoteError } from "@cheese/messaging";
import { z } from "zod";
import {
  Cheese,
  CheeseChanges,
  CheeseFields,
  CheeseFilters,
  CheeseImage,
  CheeseList,
  CheeseSort,
  CheeseStatus,
  ImageFormat,
  Inventory,
} from "../cheese.ts";

/** A cheese as the catalogue returns it, with the stream revision for ETags. */
export const CheeseReply = z.object({ cheese: Cheese, revision: z.number().int() });
export type CheeseReply = z.infer<typeof CheeseReply>;

const cheeseId = z.number().int().positive();

/** `If-Match` as the catalogue checks it: any of these revisions, or `*` (the cheese exists). */
export const Precondition = z.union([z.literal("*"), z.array(z.number().int())]);
export type Precondition = z.infer<typeof Precondition>;

export const catalogueRpc = {
  /**
   * POST /cheeses. With `idempotency` (the gateway's sha256 of caller id and Idempotency-Key, and
   * the request's fingerprint) the catalogue claims the cheese id for the key before creating:
   * a repeat, even after the gateway gave up on the first reply, answers with the cheese as first
   * created instead of creating another (or a 409 for its own name), marked `replayed`, or the
   * refusal the first request met; a repeat whose `fingerprint` differs is 409.
   */
  createCheese: defineRpc({
    subject: "catalogue.cheese.create",
    request: z.object({
      fields: CheeseFields,
      idempotency: z
        .object({ key: z.string().regex(/^[0-9a-f]{64}$/), fingerprint: z.string().min(1) })
        .optional(),
    }),
    response: CheeseReply.extend({ replayed: z.literal(true).optional() }),
    /** The gateway answers the cheese's JSON as the catalogue encoded it, `Location` from its id. */
    passThrough: { body: "cheese", meta: ["revision", "replayed"], bodyMeta: ["id"] },
  }),
  /** The gateway answers the cheese's JSON as the catalogue encoded it (`passThrough`). */
  getCheese: defineRpc({
    subject: "catalogue.cheese.get",
    request: z.object({ cheeseId }),
    response: CheeseReply,
    passThrough: { body: "cheese", meta: ["revision"] },
  }),
  /**
   * GET /cheeses/{id}?asOf=: the cheese as it was at `asOf` (its stream folded up to the last event
   * recorded then, whose time is `at`); 404 when it did not exist yet or was deleted by then. Read
   * from the event store, never the read model or a cache.
   */
  getCheeseAsOf: defineRpc({
    subject: "catalogue.cheese.get_as_of",
    request: z.object({ cheeseId, asOf: z.iso.datetime({ offset: true }) }),
    response: CheeseReply.extend({ at: z.string() }),
  }),
  /** PUT /cheeses: every field replaced; 404 when absent, 409 name taken, 412 If-Match failed. */
  replaceCheese: defineRpc({
    subject: "catalogue.cheese.replace",
    request: z.object({ cheeseId, fields: CheeseFields, ifMatch: Precondition.optional() }),
    response: CheeseReply,
  }),
  /** POST /cheeses/{cheeseId}: only the given fields change. */
  updateCheese: defineRpc({
    subject: "catalogue.cheese.update",
    request: z.object({ cheeseId, changes: CheeseChanges, ifMatch: Precondition.optional() }),
    response: CheeseReply,
  }),
  /** Asks ordering first: 409 with approved or shipped orders, 503 when ordering does not answer. */
  deleteCheese: defineRpc({
    subject: "catalogue.cheese.delete",
    request: z.object({ cheeseId, confirmed: z.boolean() }),
    response: z.object({ deleted: z.literal(true) }),
  }),
  listCheeses: defineRpc({
    subject: "catalogue.cheese.list",
    request: z.object({
      cursor: z.string().optional(),
      limit: z.number().int().min(1).max(100),
      /** Absent: the cursor's sort, else name. */
      sort: CheeseSort.optional(),
      /** Absent filters: the cursor's. */
      filters: CheeseFilters,
    }),
    response: CheeseList,
    /** The gateway answers the page's JSON as the catalogue encoded it, its headers from `meta`. */
    passThrough: { body: ".", meta: ["total", "nextCursor"] },
  }),
  /** findByStatus / findByTags: every match, no pagination, ordered by id. */
  findCheeses: defineRpc({
    subject: "catalogue.cheese.find",
    request: z.object({ status: z.array(CheeseStatus).optional(), tags: z.array(z.string()).optional() }),
    response: z.object({ items: z.array(Cheese) }),
    /** The gateway answers the array's JSON as the catalogue encoded it. */
    passThrough: { body: "items", meta: [] },
  }),
  inventory: defineRpc({
    subject: "catalogue.inventory.get",
    request: z.object({}),
    response: Inventory,
  }),
  /**
   * The gateway has stored the original under `originalKey`; the catalogue decodes it from the
   * blob store (415 when it does not decode as `format`), writes the thumbnail to `thumbnailKey`
   * and records the image. Only keys and URLs travel here, never bytes.
   */
  attachImage: defineRpc({
    subject: "catalogue.cheese.attach_image",
    request: z.object({
      cheeseId,
      originalKey: z.string(),
      thumbnailKey: z.string(),
      format: ImageFormat,
      size: z.number().int().positive(),
      imageUrl: z.string(),
      thumbnailUrl: z.string(),
      caption: z.string().nullable(),
      isPrimary: z.boolean(),
    }),
    response: z.object({ image: CheeseImage, revision: z.number().int() }),
  }),
  listImages: defineRpc({
    subject: "catalogue.cheese.images",
    request: z.object({ cheeseId }),
    response: z.object({ images: z.array(CheeseImage) }),
  }),
};

/**
 * A cheese as the catalogue has it now, or undefined when it does not exist. Any other failure
 * (a catalogue that does not answer in time: 503) is thrown, never read as "absent".
 */
export async function findCheese(
  bus: MessageBus,
  cheeseId: number,
  options: CallOptions,
): Promise<Cheese | undefined> {
  try {
    return (await callRpc(bus, catalogueRpc.getCheese, { cheeseId }, options)).cheese;
  } catch (error) {
    if (error instanceof RemoteError && error.body.status === 404) return undefined;
    throw error;
  }
}

/**
 * Change notices: the catalogue announces `{ cheeseId }` on the notice channel after every append
 * to (or deletion of) a cheese's stream, and waits until it is stored before it answers anything
 * that depends on the change; `{ all: true }` when a replica starts or reconnects (anything may
 * have changed). Whoever keeps catalogue replies (the gateway's read cache) follows the channel,
 * drops them on a notice, and takes a barrier before answering from them.
 */
export const cheeseChangeNotices = {
  channel: "catalogue_cheese_changed",
  notice: z.union([z.object({ cheeseId: z.number().int() }), z.object({ all: z.literal(true) })]),
};
export type CheeseChangeNotice = z.infer<typeof cheeseChangeNotices.notice>;
