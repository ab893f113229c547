import { z } from "@hono/zod-openapi";

export const cheeseStatuses = ["available", "pending", "sold"] as const;
export const CheeseStatus = z
  .enum(cheeseStatuses)
  .openapi({ description: "one of: available, pending, sold" });
export type CheeseStatus = z.infer<typeof CheeseStatus>;

const int64Id = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).openapi({ format: "int64" });
const dateTime = z.string().openapi({ format: "date-time" });

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
    ageMonths: z.number().int().min(0).max(120).optional().openapi({ description: "aging period in months" }),
    organic: z.boolean().optional().openapi({ description: "certified organic; default false" }),
    createdAt: dateTime.optional().openapi({ description: "when added" }),
    updatedAt: dateTime.optional().openapi({ description: "when last updated" }),
  })
  .openapi("Cheese");
export type Cheese = z.infer<typeof Cheese>;

const cheeseName = z.string().trim().min(1).max(100);
const nameOnly = (max: number) => z.strictObject({ name: z.string().trim().min(1).max(max) });

/** Writable fields shared by creation and replacement. */
const writableFields = {
  name: cheeseName,
  category: nameOnly(50).optional().openapi({ description: "an object with only name" }),
  photoUrls: z.array(z.string().min(1).max(2048)).max(50).optional(),
  tags: z.array(nameOnly(50)).max(20).optional().openapi({ description: "each an object with only name" }),
  origin: z.string().max(100).nullable().optional(),
  pricePerKg: z.number().gt(0).max(1_000_000).optional().openapi({ format: "float" }),
  ageMonths: z.number().int().min(0).max(120).optional(),
  organic: z.boolean().optional(),
};

/** Read-only fields are accepted and ignored in create bodies (decisions.md "Errors"). */
const ignoredReadOnly = {
  id: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  createdAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  updatedAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
};

export const CheeseInput = z
  .strictObject({ ...writableFields, status: CheeseStatus.optional(), ...ignoredReadOnly })
  .openapi("CheeseInput");
export type CheeseInput = z.infer<typeof CheeseInput>;

/** The fields a cheese command carries once read-only fields are dropped and defaults applied. */
export const CheeseFields = z.object({
  name: cheeseName,
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

export function toCheeseFields(input: CheeseInput): CheeseFields {
  const { id: _id, createdAt: _c, updatedAt: _u, ...fields } = input;
  return { ...fields, status: input.status ?? "available", organic: input.organic ?? false };
}

export const CheeseIdParam = z.object({
  cheeseId: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .openapi({ param: { name: "cheeseId", in: "path" }, type: "integer", format: "int64", minimum: 1 }),
});
