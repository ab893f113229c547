import { z } from "@hono/zod-openapi";
import { Cheese, CheeseStatus } from "./cheese.ts";
import { CustomerStatus } from "./customer.ts";
import { dateTime, int64Id } from "./fields.ts";
import { OrderItem, OrderStatus } from "./order.ts";
import { pageQuery } from "./paging.ts";

/**
 * The history of one aggregate (a cheese, an order, a customer's account): every change, oldest
 * first, as `{type, at, data}`. `type` names the change, `at` is when it was recorded, `data`
 * holds the public facts of it. A history never carries personal data of anyone but the caller,
 * nor anything erased by crypto-shredding.
 */

const entry = <T extends string, D extends z.ZodType>(type: T, data: D, description: string) =>
  z.object({ type: z.literal(type), at: dateTime, data }).openapi({ description });

export const HistoryQuery = z.object(pageQuery);

/** An entry without its time: what a service's pure mapping of one event gives. */
export type HistoryChange<E> = E extends unknown ? Omit<E, "at"> : never;

const page = <E extends z.ZodType>(item: E, name: string, example: unknown) =>
  z
    .object({
      items: z.array(item).openapi({ description: "oldest first" }),
      nextCursor: z.string().nullable().openapi({ description: "pass as ?cursor= for the next page" }),
      hasMore: z.boolean(),
    })
    .openapi(name, { example });

const CheeseImageData = z.object({
  imageUrl: z.string(),
  thumbnailUrl: z.string(),
  caption: z.string().nullable(),
  isPrimary: z.boolean(),
  width: z.number().int(),
  height: z.number().int(),
  contentType: z.string(),
  size: z.number().int(),
});

export const CheeseHistoryEntry = z
  .discriminatedUnion("type", [
    entry("cheese.added", Cheese, "the cheese as added"),
    entry("cheese.updated", Cheese, "the cheese after a replacement or partial update"),
    entry(
      "cheese.status_changed",
      z.object({ from: CheeseStatus, to: CheeseStatus }),
      "its status moved (PUT, PATCH or an inventory change)",
    ),
    entry("cheese.image_attached", CheeseImageData, "an image was uploaded"),
    entry("cheese.deleted", z.object({}), "the cheese was deleted"),
  ])
  .openapi("CheeseHistoryEntry");
export type CheeseHistoryEntry = z.infer<typeof CheeseHistoryEntry>;

export const CheeseHistory = page(CheeseHistoryEntry, "CheeseHistory", {
  items: [
    {
      type: "cheese.added",
      at: "2026-03-01T10:00:00.000Z",
      data: {
        id: 42,
        name: "Comté 18 mois",
        status: "available",
        origin: "FR",
        pricePerKg: 32.5,
        organic: false,
        tags: [],
        photoUrls: [],
        createdAt: "2026-03-01T10:00:00.000Z",
        updatedAt: "2026-03-01T10:00:00.000Z",
      },
    },
    {
      type: "cheese.status_changed",
      at: "2026-03-04T08:12:00.000Z",
      data: { from: "available", to: "sold" },
    },
  ],
  nextCursor: null,
  hasMore: false,
});

export const OrderHistoryEntry = z
  .discriminatedUnion("type", [
    entry(
      "order.placed",
      z.object({ status: OrderStatus, items: z.array(OrderItem), total: z.number() }),
      "the order was placed, with its lines and prices fixed",
    ),
    entry("order.approved", z.object({ status: OrderStatus }), "the asynchronous check approved it"),
    entry(
      "order.shipped",
      z.object({
        status: OrderStatus,
        carrier: z.string(),
        trackingNumber: z.string(),
        estimatedDelivery: dateTime,
      }),
      "it was shipped",
    ),
    entry("order.delivered", z.object({ status: OrderStatus }), "it was delivered"),
    entry("order.cancelled", z.object({ status: OrderStatus, reason: z.string() }), "it was cancelled"),
  ])
  .openapi("OrderHistoryEntry");
export type OrderHistoryEntry = z.infer<typeof OrderHistoryEntry>;

export const OrderHistory = page(OrderHistoryEntry, "OrderHistory", {
  items: [
    {
      type: "order.placed",
      at: "2026-03-01T10:00:00.000Z",
      data: {
        status: "placed",
        items: [{ cheeseId: 42, cheeseName: "Comté 18 mois", quantity: 2, pricePerKg: 32.5 }],
        total: 65,
      },
    },
    { type: "order.approved", at: "2026-03-01T10:00:05.000Z", data: { status: "approved" } },
    {
      type: "order.shipped",
      at: "2026-03-02T09:30:00.000Z",
      data: {
        status: "shipped",
        carrier: "DHL",
        trackingNumber: "JD014600006281230000",
        estimatedDelivery: "2026-03-05T00:00:00.000Z",
      },
    },
  ],
  nextCursor: null,
  hasMore: false,
});

const AccountData = z.object({
  username: z.string(),
  firstName: z.string().optional(),
  lastName: z.string().optional(),
  email: z.string().optional().openapi({ description: "absent if it can no longer be read" }),
  phone: z.string().nullable().optional(),
  favouriteCheese: z.object({ id: int64Id.optional(), name: z.string() }).nullable(),
});

export const CustomerHistoryEntry = z
  .discriminatedUnion("type", [
    entry("customer.registered", AccountData, "the account was opened"),
    entry("customer.updated", AccountData, "the account was changed (as it was afterwards)"),
    entry(
      "customer.order_counted",
      z.object({ orderId: int64Id, total: z.number(), deliveredTotal: z.number() }),
      "a delivered order was added to the purchase volume",
    ),
    entry(
      "customer.status_changed",
      z.object({ from: CustomerStatus, to: CustomerStatus }),
      "the tier (customerStatus) moved",
    ),
    entry(
      "api_key.issued",
      z.object({ keyId: int64Id, prefix: z.string(), expiresAt: dateTime }),
      "a personal API key was issued",
    ),
    entry(
      "customer.password_changed",
      z.object({ revokedApiKeys: z.array(int64Id) }),
      "the password was changed: every other session, OAuth grant and the API keys listed ended",
    ),
    entry("api_key.revoked", z.object({ keyId: int64Id }), "a personal API key was revoked"),
    entry(
      "api_key.expiring",
      z.object({ keyId: int64Id, prefix: z.string(), expiresAt: dateTime }),
      "a personal API key was announced as expiring in 7 days",
    ),
  ])
  .openapi("CustomerHistoryEntry");
export type CustomerHistoryEntry = z.infer<typeof CustomerHistoryEntry>;

export const CustomerHistory = page(CustomerHistoryEntry, "CustomerHistory", {
  items: [
    {
      type: "customer.registered",
      at: "2026-01-10T12:00:00.000Z",
      data: {
        username: "alice",
        firstName: "Alice",
        email: "alice@example.com",
        phone: null,
        favouriteCheese: { id: 42, name: "Comté 18 mois" },
      },
    },
    {
      type: "api_key.issued",
      at: "2026-01-11T08:00:00.000Z",
      data: { keyId: 7, prefix: "ck_live_3f9a", expiresAt: "2026-04-11T08:00:00.000Z" },
    },
    {
      type: "customer.status_changed",
      at: "2026-02-20T16:45:00.000Z",
      data: { from: "bronze", to: "silver" },
    },
  ],
  nextCursor: null,
  hasMore: false,
});
