import { z } from "@hono/zod-openapi";
import { dateTime, int64Id, pathId } from "./fields.ts";
import { pageQuery } from "./paging.ts";
import { httpUrl } from "./urls.ts";

export const cheeseStatuses = ["available", "pending", "sold"] as const;
export const CheeseStatus = z
  .enum(cheeseStatuses)
  .openapi({ description: "one of: available, pending, sold" });
export type CheeseStatus = z.infer<typeof CheeseStatus>;

export const Category = z.object({ id: int64Id, name: z.string() }).openapi("Category");
export const Tag = z.object({ id: int64Id, name: z.string() }).openapi("Tag");

export const Cheese = z
  .object({
    id: int64Id.openapi({ description: "unique identifier" }),
    name: z.string().openapi({ description: "name of the cheese; unique within its category" }),
    category: Category.optional(),
    photoUrls: z.array(z.string()).optional().openapi({ description: "URLs of photos" }),
    tags: z.array(Tag).optional().openapi({ description: "classification tags" }),
    status: CheeseStatus,
    origin: z.string().nullable().optional().openapi({ description: "country of origin, null if unknown" }),
    pricePerKg: z.number().gt(0).optional().openapi({ format: "float", description: "greater than 0; USD" }),
    ageMonths: z
      .number()
      .int()
      .min(0)
      .max(120)
      .optional()
      .openapi({ description: "0 to 120 inclusive; aging period in months" }),
    organic: z.boolean().optional().openapi({ description: "certified organic; default false" }),
    createdAt: dateTime.optional().openapi({ description: "when added" }),
    updatedAt: dateTime.optional().openapi({ description: "when last updated" }),
  })
  .openapi("Cheese");
export type Cheese = z.infer<typeof Cheese>;

/**
 * Characters a cheese name never holds: control characters (NUL included), format characters
 * (zero-width spaces and joiners, direction marks, the BOM), and lone surrogates (half of a
 * character, which no encoding can carry): each would make names that look alike but differ.
 */
const INVISIBLE_OR_BROKEN = /[\p{Cc}\p{Cf}\p{Cs}]/u;
export const CheeseName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .refine((name) => !INVISIBLE_OR_BROKEN.test(name), {
    message: "must not contain control, format (zero-width) or unpaired surrogate characters",
  });

/** How many photoUrls a cheese holds at most, an upload's included (docs/catalogue.md). */
export const MAX_PHOTO_URLS = 50;
export const MAX_PHOTO_URL_LENGTH = 2048;
const tagName = z.string().trim().min(1).max(50);
const nameOnly = z.strictObject({ name: tagName });
/** In a replacement body a category or tag may carry the id it was returned with; the name decides. */
const nameWithId = z.strictObject({ id: int64Id.optional(), name: tagName });

/** Writable fields shared by creation, replacement and partial update. */
const writableFields = {
  name: CheeseName,
  photoUrls: z
    .array(httpUrl(MAX_PHOTO_URL_LENGTH, "must be an absolute http or https URL"))
    .max(MAX_PHOTO_URLS)
    .optional(),
  origin: z.string().max(100).nullable().optional(),
  pricePerKg: z.number().gt(0).max(1_000_000).optional().openapi({ format: "float" }),
  ageMonths: z.number().int().min(0).max(120).optional(),
  organic: z.boolean().optional(),
};

/** Read-only fields are accepted and ignored in write bodies (docs/api.md "Errors"). */
const ignoredReadOnly = {
  id: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  createdAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  updatedAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
};

export const CheeseInput = z
  .strictObject({
    ...writableFields,
    category: nameOnly.optional().openapi({ description: "an object with only name" }),
    tags: z.array(nameOnly).max(20).optional().openapi({ description: "each an object with only name" }),
    status: CheeseStatus.optional().openapi({ description: "default available" }),
    ...ignoredReadOnly,
  })
  .openapi("CheeseInput");
export type CheeseInput = z.infer<typeof CheeseInput>;

/** Body of PUT /cheeses: a whole cheese; id, name and status required; omitted fields reset. */
export const CheeseReplacement = z
  .strictObject({
    ...writableFields,
    id: int64Id.openapi({ description: "the cheese to replace" }),
    category: nameWithId.optional(),
    tags: z.array(nameWithId).max(20).optional(),
    status: CheeseStatus,
    createdAt: ignoredReadOnly.createdAt,
    updatedAt: ignoredReadOnly.updatedAt,
  })
  .openapi("CheeseReplacement");
export type CheeseReplacement = z.infer<typeof CheeseReplacement>;

/** Optional JSON body of POST /cheeses/{cheeseId}: any CheeseInput fields, merged. */
export const CheesePatch = z
  .strictObject({
    ...writableFields,
    name: CheeseName.optional(),
    category: nameOnly.nullable().optional().openapi({ description: "null removes the category" }),
    tags: z.array(nameOnly).max(20).optional(),
    status: CheeseStatus.optional(),
    ...ignoredReadOnly,
  })
  .openapi("CheesePatch");
export type CheesePatch = z.infer<typeof CheesePatch>;

/** The fields a cheese command carries once read-only fields are dropped and defaults applied. */
export const CheeseFields = z.object({
  name: CheeseName,
  category: z.object({ name: z.string() }).optional(),
  photoUrls: z.array(z.string()).optional(),
  tags: z.array(z.object({ name: z.string() })).optional(),
  status: CheeseStatus,
  origin: z.string().nullable().optional(),
  pricePerKg: z.number().optional(),
  ageMonths: z.number().int().optional(),
  organic: z.boolean(),
});
export type CheeseFields = z.infer<typeof CheeseFields>;

/** A partial update: absent fields stay; `category: null` removes the category. */
export const CheeseChanges = CheeseFields.partial().extend({
  category: z.object({ name: z.string() }).nullable().optional(),
});
export type CheeseChanges = z.infer<typeof CheeseChanges>;

/** What a body's fields become in a command: read-only fields dropped, category and tags by name. */
const NOT_COPIED = new Set(["id", "createdAt", "updatedAt", "category", "tags"]);

/**
 * The command's fields of a create's or a replacement's body, in the body's order. A loop, not a
 * rest pattern (`{ id, ...fields }`): copying all but a few keys that way took 1.5 µs, this 0.15.
 */
export function toCheeseFields(input: CheeseInput | CheeseReplacement): CheeseFields {
  const fields: Record<string, unknown> = {};
  for (const key in input) if (!NOT_COPIED.has(key)) fields[key] = input[key as keyof typeof input];
  if (input.category) fields.category = { name: input.category.name };
  if (input.tags) fields.tags = input.tags.map((tag) => ({ name: tag.name }));
  fields.status = input.status ?? "available";
  fields.organic = input.organic ?? false;
  return fields as CheeseFields;
}

/** Body fields first, then the query parameters, which win when both name the same field. */
export function toCheeseChanges(
  body: CheesePatch,
  query: { name?: string | undefined; status?: CheeseStatus | undefined },
): CheeseChanges {
  const { id: _id, createdAt: _c, updatedAt: _u, ...changes } = body;
  return {
    ...changes,
    ...(query.name !== undefined ? { name: query.name } : {}),
    ...(query.status !== undefined ? { status: query.status } : {}),
  };
}

export const CheeseIdParam = z.object({
  cheeseId: pathId("cheeseId"),
});

/** The writes of an existing cheese take the ETag the client last saw. */
export const IfMatchHeaders = z.object({
  "If-Match": z
    .string()
    .optional()
    .openapi({
      param: { in: "header" },
      description: "the ETag the client last saw; 412 when the cheese has changed since",
    }),
});

/** A cheese's answers carry its revision. */
export const etagHeader = {
  ETag: { description: "the cheese's revision, for If-Match", schema: { type: "string" as const } },
};

/** POST /cheeses/{cheeseId}: the query's name and status win over the body's. */
export const CheeseUpdateQuery = z.object({
  name: CheeseName.optional().openapi({ description: "new name" }),
  status: CheeseStatus.optional().openapi({ description: "new status: available, pending, sold" }),
});

/** DELETE /cheeses/{cheeseId} asks for `X-Confirm-Delete: true`. */
export const CheeseDeleteHeaders = z.object({
  "X-Confirm-Delete": z
    .string()
    .refine((value) => value.trim().toLowerCase() === "true", { message: "must be true" })
    .openapi({ param: { in: "header", required: true }, type: "boolean", description: "must be true" }),
});

// ---------------------------------------------------------------------------------------------
// Listing

export const cheeseSorts = ["name", "-name", "createdAt", "-createdAt"] as const;
export const CheeseSort = z.enum(cheeseSorts);
export type CheeseSort = z.infer<typeof CheeseSort>;

/** What a list is filtered by, normalised (lower-case names, sorted lists) so cursors compare. */
export const CheeseFilters = z.object({
  status: z.array(CheeseStatus).optional(),
  tags: z.array(z.string()).optional(),
  category: z.string().optional(),
  organic: z.boolean().optional(),
});
export type CheeseFilters = z.infer<typeof CheeseFilters>;

export const TAG_MAX_LENGTH = 50;

const statusList = z.string().regex(/^(available|pending|sold)(,(available|pending|sold))*$/, {
  message: "each status must be one of available, pending, sold",
});
/** A comma-separated list of tag names, each 1 to 50 characters. */
const tagList = z
  .string()
  .refine((text) => splitList(text).every((tag) => tag.length >= 1 && tag.length <= TAG_MAX_LENGTH), {
    message: `each tag must be 1 to ${TAG_MAX_LENGTH} characters`,
  });

export const CheeseListQuery = z.object({
  ...pageQuery,
  status: statusList
    .optional()
    .openapi({ description: "available, pending, sold; several comma-separated", example: "available" }),
  sort: CheeseSort.optional().openapi({
    description: "name, -name, createdAt, -createdAt; ties break on id",
    default: "name",
  }),
  tags: tagList
    .optional()
    .openapi({ description: "comma-separated tag names; a cheese with any of them matches" }),
  category: z.string().trim().min(1).max(50).optional().openapi({ description: "category name" }),
  organic: z
    .enum(["true", "false"])
    .optional()
    .openapi({ type: "boolean", description: "only organic (true) or non-organic (false) cheeses" }),
});
export type CheeseListQuery = z.infer<typeof CheeseListQuery>;

/** What the catalogue is asked for a GET /cheeses query: its filters parsed, absent ones left out. */
export function toCheeseListRequest(query: CheeseListQuery) {
  return {
    limit: query.limit,
    ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    ...(query.sort !== undefined ? { sort: query.sort } : {}),
    filters: {
      ...(query.status !== undefined ? { status: splitList(query.status) as CheeseStatus[] } : {}),
      ...(query.tags !== undefined ? { tags: splitList(query.tags) } : {}),
      ...(query.category !== undefined ? { category: query.category } : {}),
      ...(query.organic !== undefined ? { organic: query.organic === "true" } : {}),
    },
  };
}

export const CheeseList = z
  .object({
    items: z.array(Cheese),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "cursor for the next page; null when no more results" }),
    hasMore: z.boolean().openapi({ description: "whether more results exist" }),
    total: z.number().int().openapi({ description: "total number of matching cheeses" }),
  })
  .openapi("CheeseList");
export type CheeseList = z.infer<typeof CheeseList>;

/** `a,b` and repeated parameters (`?x=a&x=b`) both give a list. */
const commaSeparatedArray = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (value) => (Array.isArray(value) ? value.flatMap(splitList) : splitList(String(value ?? ""))),
    z.array(item).min(1),
  );

export const FindByStatusQuery = z.object({
  status: commaSeparatedArray(CheeseStatus).openapi({
    param: { name: "status", in: "query", style: "form", explode: false, required: true },
    type: "array",
    items: { type: "string", enum: [...cheeseStatuses] },
    description: "several values comma-separated; a cheese matching any value is returned",
  }),
});

export const FindByTagsQuery = z.object({
  tags: commaSeparatedArray(z.string().trim().min(1).max(TAG_MAX_LENGTH)).openapi({
    param: { name: "tags", in: "query", style: "form", explode: false, required: true },
    type: "array",
    items: { type: "string", minLength: 1, maxLength: TAG_MAX_LENGTH },
    description: "comma-separated tag names",
  }),
});

export function splitList(text: string): string[] {
  return text.split(",").map((part) => part.trim());
}

// ---------------------------------------------------------------------------------------------
// Images and inventory

export const ImageUploadResult = z
  .object({
    imageUrl: z.string().openapi({ format: "uri" }),
    thumbnailUrl: z.string().openapi({ format: "uri" }),
    size: z.number().int().openapi({ description: "size of the uploaded file in bytes" }),
  })
  .openapi("ImageUploadResult");
export type ImageUploadResult = z.infer<typeof ImageUploadResult>;

/** The spec's image size limit, 10 MB, read as 10 MiB. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
export const MAX_CAPTION_LENGTH = 500;

/** An image upload's multipart/form-data body, as documented (the gateway checks its parts). */
export const ImageUploadForm = {
  type: "object" as const,
  required: ["file"],
  properties: {
    file: {
      type: "string" as const,
      format: "binary",
      description: `JPEG, PNG or WebP; at most 10MB (${MAX_IMAGE_BYTES} bytes)`,
    },
    caption: { type: "string" as const, maxLength: MAX_CAPTION_LENGTH },
    isPrimary: { type: "boolean" as const, default: false, description: "sets the primary display image" },
  },
};

export const imageFormats = ["jpeg", "png", "webp"] as const;
export const ImageFormat = z.enum(imageFormats);
export type ImageFormat = z.infer<typeof ImageFormat>;
export const imageMediaTypes: Record<ImageFormat, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
};
export const imageExtensions: Record<ImageFormat, string> = { jpeg: "jpg", png: "png", webp: "webp" };

/**
 * The format an upload claims by its first bytes (magic numbers), whatever its name or declared
 * Content-Type say. Whether it really decodes is checked by the catalogue with sharp.
 */
export function detectImageFormat(head: Uint8Array): ImageFormat | undefined {
  const starts = (bytes: number[], at = 0) => bytes.every((byte, i) => head[at + i] === byte);
  if (starts([0xff, 0xd8, 0xff])) return "jpeg";
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  // "RIFF" <size> "WEBP"
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "webp";
  return undefined;
}

/** GET /images/{file}: an image's file name under `images/` (an unknown name is a 404). */
export const ImageFileParam = z.object({ file: z.string().openapi({ param: { name: "file", in: "path" } }) });

/** An image attached to a cheese, as kept by the catalogue (beyond the spec: its caption and role). */
export const CheeseImage = z
  .object({
    imageUrl: z.string().openapi({ format: "uri" }),
    thumbnailUrl: z.string().openapi({ format: "uri" }),
    size: z.number().int(),
    contentType: z.string(),
    width: z.number().int(),
    height: z.number().int(),
    caption: z.string().nullable(),
    isPrimary: z.boolean(),
    createdAt: dateTime,
  })
  .openapi("CheeseImage");
export type CheeseImage = z.infer<typeof CheeseImage>;

export const Inventory = z
  .object({
    available: z.number().int().min(0),
    pending: z.number().int().min(0),
    sold: z.number().int().min(0),
  })
  .openapi("Inventory", { description: "count of cheeses per status" });
export type Inventory = z.infer<typeof Inventory>;
