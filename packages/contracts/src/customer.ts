import { z } from "@hono/zod-openapi";
import { Cheese } from "./cheese.ts";
import { type RatePlan, ratePlans } from "./config.ts";
import { dateTime, int64Id, pathId } from "./fields.ts";

export const customerStatuses = ["bronze", "silver", "gold", "platinum"] as const;
export const CustomerStatus = z
  .enum(customerStatuses)
  .openapi({ description: "tier based on purchase volume; one of: bronze, silver, gold, platinum" });
export type CustomerStatus = z.infer<typeof CustomerStatus>;

/** The smaller of two plans (listed smallest first). */
export function lowerPlan(a: RatePlan, b: RatePlan): RatePlan {
  return ratePlans.indexOf(a) <= ratePlans.indexOf(b) ? a : b;
}

/** Customers are `free` unless gold (`pro`) or platinum (`enterprise`). */
export function planForStatus(status: CustomerStatus): RatePlan {
  if (status === "platinum") return "enterprise";
  if (status === "gold") return "pro";
  return "free";
}

/**
 * Paths the gateway serves under /customer/ beside /customer/{username}; an account of that name
 * could never be read, so nobody may register it.
 */
export const reservedUsernames = ["login", "logout", "createmultiple"] as const;

export const Username = z
  .string()
  .regex(/^[A-Za-z0-9._-]{3,32}$/, "must be 3 to 32 characters of A-Z, a-z, 0-9, '.', '_' or '-'")
  .refine((name) => !(reservedUsernames as readonly string[]).includes(name.toLowerCase()), {
    message: "is reserved",
  })
  .openapi({ description: "3 to 32 of [A-Za-z0-9._-]; unique case-insensitively", example: "alice" });

export const UsernameParam = z.object({
  username: z
    .string()
    .regex(/^[A-Za-z0-9._-]{3,32}$/, "must be 3 to 32 characters of A-Z, a-z, 0-9, '.', '_' or '-'")
    .openapi({ param: { name: "username", in: "path" }, example: "alice" }),
});

const Password = z
  .string()
  .min(8, "must be at least 8 characters")
  .max(128, "must be at most 128 characters")
  .openapi({ format: "password", description: "8 to 128 characters; never returned" });

const Email = z.email().max(254).openapi({ format: "email", description: "unique case-insensitively" });

const Phone = z
  .string()
  .regex(/^\+?[0-9][0-9 ().-]{2,31}$/, "must be a phone number of digits, spaces and + ( ) . -")
  .nullable()
  .openapi({ example: "+44 20 7946 0000" });

const PersonName = z.string().trim().max(100);

/** `{id}` of a catalogue cheese, or `{name}` of any cheese (docs/identity.md "Customer accounts"). */
export const FavouriteCheeseInput = z
  .union([
    z.strictObject({ id: int64Id.openapi({ description: "a catalogue cheese" }) }),
    z.strictObject({ name: z.string().trim().min(1).max(100) }),
  ])
  .openapi("FavouriteCheeseInput", { description: "{id} of a catalogue cheese, or {name}" });

export const FavouriteCheeseByName = z.object({ name: z.string() }).openapi("FavouriteCheeseByName");

/** Read-only fields are accepted and ignored in create bodies (docs/api.md "Errors"). */
const ignoredReadOnly = {
  id: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  createdAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  updatedAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
};

const customerInputShape = {
  username: Username,
  firstName: PersonName.optional(),
  lastName: PersonName.optional(),
  email: Email,
  password: Password,
  phone: Phone.optional(),
  favouriteCheese: FavouriteCheeseInput.optional(),
  ...ignoredReadOnly,
};

export const CustomerInput = z.strictObject(customerInputShape).openapi("CustomerInput");
export type CustomerInput = z.infer<typeof CustomerInput>;

const currentPassword = z.string().min(1).max(1024).openapi({
  format: "password",
  description: "the account's current password (422 without it, 403 when wrong)",
});

/**
 * PUT /customer/{username}: the account as it should be, and the current password, always: a PUT
 * always carries a password, and answering one without currentPassword would tell whether that
 * password is the current one. A schema of its own, not an allOf over CustomerInput: both forbid
 * unknown fields, which allOf would make every body break one part or the other.
 */
export const CustomerUpdateInput = z
  .strictObject({ ...customerInputShape, currentPassword })
  .openapi("CustomerUpdateInput");
export type CustomerUpdateInput = z.infer<typeof CustomerUpdateInput>;

/** DELETE /customer/{username}: the password again, so a stolen token alone cannot erase the account. */
export const CustomerDeletion = z.strictObject({ currentPassword }).openapi("CustomerDeletion");

/** What a register or replace command carries: read-only fields dropped, phone defaulted. */
export const CustomerFields = z.object({
  username: z.string(),
  firstName: z.string().optional(),
  lastName: z.string().optional(),
  email: z.string(),
  password: z.string(),
  phone: z.string().nullable(),
  favouriteCheese: z
    .union([z.object({ id: z.number().int().positive() }), z.object({ name: z.string() })])
    .optional(),
});
export type CustomerFields = z.infer<typeof CustomerFields>;

export function toCustomerFields(input: CustomerInput): CustomerFields {
  const { id: _id, createdAt: _c, updatedAt: _u, phone, ...fields } = input;
  return { ...fields, phone: phone ?? null };
}

export const Customer = z
  .object({
    id: int64Id,
    username: z.string(),
    firstName: z.string().optional(),
    lastName: z.string().optional(),
    email: z.string().openapi({ format: "email" }),
    phone: z.string().nullable(),
    customerStatus: CustomerStatus,
    favouriteCheese: z
      .union([Cheese, FavouriteCheeseByName])
      .optional()
      .openapi({ description: "the catalogue cheese, or {name} (also when that cheese was deleted)" }),
    createdAt: dateTime,
  })
  .openapi("Customer", { description: "The password is never part of a returned customer." });
export type Customer = z.infer<typeof Customer>;

export const LoginInput = z
  .strictObject({
    username: z.string().min(1).max(256),
    password: z.string().min(1).max(1024).openapi({ format: "password" }),
  })
  .openapi("LoginInput");

export const LoginResult = z
  .object({
    token: z.string().openapi({ description: "JWT (EdDSA), sent as a bearer credential" }),
    expiresAt: dateTime.openapi({ description: "24 hours after issue" }),
  })
  .openapi("LoginResult");

/** The headers of a login's answer, beside its LoginResult. */
export const loginHeaders = {
  "X-Rate-Limit": {
    description: "requests per hour the customer's plan allows",
    schema: { type: "integer" as const, format: "int32" },
  },
  "X-Expires-After": {
    description: "when the token expires (= expiresAt)",
    schema: { type: "string" as const, format: "date-time" },
  },
};

/** At most 100 elements (docs/identity.md); each element is validated on its own. */
export const MAX_BATCH = 100;
const customerInputFields = new Set(Object.keys(customerInputShape));
/**
 * Elements are checked one by one in the handler (an invalid one is an error at its index), so
 * the body schema bounds the array and refuses only unknown fields, a mistake in the request's
 * shape: a batch with any is 422 at once, naming `[index].field`, and nothing is registered.
 */
export const CustomerBatchInput = z
  .array(z.unknown())
  .max(MAX_BATCH, `at most ${MAX_BATCH} customers per batch`)
  .superRefine((elements, context) => {
    elements.forEach((element, index) => {
      if (typeof element !== "object" || element === null || Array.isArray(element)) return;
      const keys = Object.keys(element).filter((key) => !customerInputFields.has(key));
      if (keys.length === 0) return;
      const input = element as Record<string, unknown>;
      context.addIssue({ code: "unrecognized_keys", keys, path: [index], input });
    });
  })
  .openapi({
    description: "JSON array of CustomerInput, at most 100",
    items: { $ref: "#/components/schemas/CustomerInput" },
  });

export const BatchError = z
  .object({
    index: z.number().int().min(0).openapi({ description: "position in the submitted array" }),
    message: z.string(),
  })
  .openapi("BatchError");

export const CustomerBatchResult = z
  .object({ created: z.array(Customer), errors: z.array(BatchError) })
  .openapi("CustomerBatchResult");
export type CustomerBatchResult = z.infer<typeof CustomerBatchResult>;

/** Customer API keys start with this, so the gateway asks the customer service only about likely keys. */
export const CUSTOMER_API_KEY_PREFIX = "chs_";

/** A customer's personal API key, as listed (the key itself is shown only on creation). */
export const ApiKeySummary = z
  .object({
    id: int64Id,
    prefix: z.string().openapi({ description: "the key's first characters, to recognise it" }),
    plan: z.enum(ratePlans),
    createdAt: dateTime,
    expiresAt: dateTime,
  })
  .openapi("ApiKeySummary");
export type ApiKeySummary = z.infer<typeof ApiKeySummary>;

/** A key as a customer's data export lists it: revoked ones too; never the key or its hash. */
export const ExportedApiKey = ApiKeySummary.extend({
  revoked: z.boolean().openapi({ description: "revoked keys stay listed: the account's events name them" }),
}).openapi("ExportedApiKey");
export type ExportedApiKey = z.infer<typeof ExportedApiKey>;

export const IssuedApiKey = z
  .object({
    id: ApiKeySummary.shape.id,
    key: z.string().openapi({ description: "send as X-API-Key; shown only in this response" }),
    prefix: ApiKeySummary.shape.prefix,
    plan: ApiKeySummary.shape.plan,
    createdAt: ApiKeySummary.shape.createdAt,
    expiresAt: ApiKeySummary.shape.expiresAt,
  })
  .openapi("IssuedApiKey");
export type IssuedApiKey = z.infer<typeof IssuedApiKey>;

export const ApiKeyIdParam = UsernameParam.extend({
  id: pathId("id"),
});
