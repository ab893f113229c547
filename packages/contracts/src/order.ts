import { z } from "@hono/zod-openapi";

export const orderStatuses = ["placed", "approved", "shipped", "delivered", "cancelled"] as const;
export const OrderStatus = z.enum(orderStatuses);
export type OrderStatus = z.infer<typeof OrderStatus>;

const int64Id = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).openapi({ format: "int64" });
const dateTime = z.string().openapi({ format: "date-time" });

export const Address = z
  .object({
    street: z.string(),
    city: z.string(),
    state: z.string().nullable().optional(),
    zipCode: z.string().optional(),
    country: z.string().openapi({ description: "ISO 3166-1 alpha-2 code" }),
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
