import { z } from "@hono/zod-openapi";
import { isoCountryCodes } from "./countries.ts";
import { dateTime, int64Id, pathId } from "./fields.ts";
import { pageQuery } from "./paging.ts";

export const orderStatuses = ["placed", "approved", "shipped", "delivered", "cancelled"] as const;
export const OrderStatus = z.enum(orderStatuses);
export type OrderStatus = z.infer<typeof OrderStatus>;

const text = (max: number) => z.string().trim().min(1).max(max);

export const Address = z
  .strictObject({
    street: text(200),
    city: text(100),
    state: z.string().trim().max(100).nullable().optional(),
    zipCode: z.string().trim().max(20).optional(),
    country: z
      .string()
      .regex(/^[A-Z]{2}$/, "must be an ISO 3166-1 alpha-2 code in capitals, like GB")
      .refine((code) => isoCountryCodes.has(code), "is not an ISO 3166-1 alpha-2 country code")
      .openapi({ description: "ISO 3166-1 alpha-2 code", example: "GB" }),
  })
  .openapi("Address");
export type Address = z.infer<typeof Address>;

export const OrderItem = z
  .object({
    cheeseId: int64Id,
    cheeseName: z.string(),
    quantity: z.number().int().min(1),
    pricePerKg: z.number().openapi({ format: "float" }),
  })
  .openapi("OrderItem");
export type OrderItem = z.infer<typeof OrderItem>;

export const Order = z
  .object({
    id: int64Id,
    items: z.array(OrderItem),
    shippingAddress: Address,
    status: OrderStatus,
    notes: z.string().nullable(),
    total: z.number().openapi({ format: "float", description: "order total in USD" }),
    shipDate: dateTime
      .nullable()
      .openapi({ description: "estimated ship date; null when not yet scheduled" }),
    createdAt: dateTime,
    updatedAt: dateTime,
  })
  .openapi("Order");
export type Order = z.infer<typeof Order>;

export const OrderLineInput = z.strictObject({
  cheeseId: int64Id,
  quantity: z.number().int().min(1).max(100).openapi({ description: "1 to 100 inclusive" }),
});
export type OrderLineInput = z.infer<typeof OrderLineInput>;

/** Two lines for the same cheese are 422, naming the later line (docs/ordering.md "Placement"). */
const orderLines = z
  .array(OrderLineInput)
  .min(1)
  .max(50)
  .superRefine((lines, ctx) => {
    const firstLine = new Map<number, number>();
    lines.forEach((line, index) => {
      const first = firstLine.get(line.cheeseId);
      if (first === undefined) firstLine.set(line.cheeseId, index);
      else
        ctx.addIssue({
          code: "custom",
          path: [index, "cheeseId"],
          message: `cheese ${line.cheeseId} is already ordered on line items[${first}]`,
        });
    });
  })
  .openapi({ description: "1 to 50 lines, at most one per cheese" });

/** Read-only fields are accepted and ignored in create bodies (docs/api.md "Errors"). */
const ignoredReadOnly = {
  id: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  createdAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
  updatedAt: z.unknown().optional().openapi({ readOnly: true, description: "ignored" }),
};

export const OrderInput = z
  .strictObject({
    items: orderLines,
    shippingAddress: Address,
    notes: z.string().max(2000).nullable().optional().openapi({ description: "special instructions" }),
    ...ignoredReadOnly,
  })
  .openapi("OrderInput");
export type OrderInput = z.infer<typeof OrderInput>;

/** What a placement carries to the ordering service once read-only fields are dropped. */
export const OrderFields = z.object({
  items: z.array(z.object({ cheeseId: z.number().int().positive(), quantity: z.number().int() })),
  shippingAddress: Address,
  notes: z.string().nullable(),
});
export type OrderFields = z.infer<typeof OrderFields>;

export function toOrderFields(input: OrderInput): OrderFields {
  return { items: input.items, shippingAddress: input.shippingAddress, notes: input.notes ?? null };
}

/** Body of `POST /store/order/{orderId}/ship` (docs/ordering.md "Fulfilment and cancellation"). */
export const ShipmentInput = z
  .strictObject({
    carrier: text(100),
    trackingNumber: text(100),
    estimatedDelivery: z.iso
      .datetime({ offset: true })
      .openapi({ format: "date-time", description: "when the carrier expects to deliver" }),
  })
  .openapi("ShipmentInput");
export type ShipmentInput = z.infer<typeof ShipmentInput>;

export const OrderList = z
  .object({
    items: z.array(Order),
    nextCursor: z.string().nullable().openapi({ description: "cursor for the next page; null when none" }),
    hasMore: z.boolean(),
    total: z.number().int().openapi({ description: "total number of matching orders" }),
  })
  .openapi("OrderList");
export type OrderList = z.infer<typeof OrderList>;

export const OrderIdParam = z.object({
  orderId: pathId("orderId"),
});

/** GET /store/orders: a page, optionally of some statuses only. */
export const OrderListQuery = z.object({
  ...pageQuery,
  status: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      const statuses = value.split(",");
      const unknown = statuses.filter((s) => !(orderStatuses as readonly string[]).includes(s));
      if (unknown.length > 0) {
        ctx.addIssue({ code: "custom", message: `unknown status ${unknown.join(", ")}` });
        return z.NEVER;
      }
      return statuses as (typeof orderStatuses)[number][];
    })
    .openapi({
      type: "string",
      description: `one or several of ${orderStatuses.join(", ")}, comma separated`,
    }),
});
