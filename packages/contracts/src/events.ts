import { defineEvent } from "@cheese/messaging";
import { z } from "zod";
import { Cheese, CheeseStatus } from "./cheese.ts";
import { Order } from "./order.ts";

/**
 * Integration events: what one service tells the others, on JetStream subjects
 * `events.<service>.<aggregate>.<event>`. The producer publishes exactly these payloads through
 * its outbox relay (message id = event-store event id); consumers validate them. The notification
 * service turns them into the spec's webhook kinds (docs/webhooks.md "Event kinds"). No personal data
 * (email, names, phone, a customer's shipping address or order notes) travels here in the clear, so
 * erasure never has to chase it: what is personal travels sealed under the customer's key.
 */
export const catalogueEvents = {
  cheeseAdded: defineEvent({
    subject: "events.catalogue.cheese.added",
    schema: z.object({ cheese: Cheese }),
  }),
  cheeseUpdated: defineEvent({
    subject: "events.catalogue.cheese.updated",
    schema: z.object({ cheese: Cheese }),
  }),
  /** Emitted whenever status changes (creation excluded): pending → low_stock, sold → out_of_stock, available → back_in_stock. */
  cheeseStatusChanged: defineEvent({
    subject: "events.catalogue.cheese.status_changed",
    schema: z.object({ cheese: Cheese, from: CheeseStatus, to: CheeseStatus }),
  }),
  /** Ordering cancels the cheese's placed orders when it sees this. */
  cheeseDeleted: defineEvent({
    subject: "events.catalogue.cheese.deleted",
    schema: z.object({ cheeseId: z.number().int().positive(), name: z.string() }),
  }),
};

const OrderEvent = z.object({
  /**
   * The order as ordering's events hold it: a customer's shipping address and notes redacted
   * (`{street: "[erased]", city: "[erased]", country}`, notes null), an operator order's in clear.
   */
  order: Order,
  /** The customer who placed it, or null for an operator client. */
  customerId: z.number().int().positive().nullable(),
  /**
   * A customer's shipping address and notes, sealed under the customer's key by the customer
   * service (`customer.personal_data.open` with purpose `order` opens them; null once the
   * customer is erased). Absent for operator orders, and for orders placed before addresses were
   * sealed (their `order` carries them in clear).
   */
  personal: z.string().optional(),
});

export const orderingEvents = {
  orderPlaced: defineEvent({ subject: "events.ordering.order.placed", schema: OrderEvent }),
  orderApproved: defineEvent({ subject: "events.ordering.order.approved", schema: OrderEvent }),
  orderShipped: defineEvent({
    subject: "events.ordering.order.shipped",
    schema: OrderEvent.extend({
      trackingNumber: z.string(),
      carrier: z.string(),
      estimatedDelivery: z.string(),
    }),
  }),
  /** The customer service adds `order.total` to the customer's delivered total (tiers). */
  orderDelivered: defineEvent({ subject: "events.ordering.order.delivered", schema: OrderEvent }),
  orderCancelled: defineEvent({
    subject: "events.ordering.order.cancelled",
    schema: OrderEvent.extend({ reason: z.string() }),
  }),
};

const CustomerRef = z.object({ customerId: z.number().int().positive(), username: z.string() });
const CustomerStatus = z.enum(["bronze", "silver", "gold", "platinum"]);

export const customerEvents = {
  customerCreated: defineEvent({ subject: "events.customer.customer.created", schema: CustomerRef }),
  customerUpdated: defineEvent({ subject: "events.customer.customer.updated", schema: CustomerRef }),
  customerStatusChanged: defineEvent({
    subject: "events.customer.customer.status_changed",
    schema: CustomerRef.extend({ from: CustomerStatus, to: CustomerStatus }),
  }),
  customerDeleted: defineEvent({ subject: "events.customer.customer.deleted", schema: CustomerRef }),
  /**
   * The password changed: credentials issued under an older `passwordVersion` end (sessions but
   * `keptSession`, the one that made the change; OAuth grants), and so do the API keys named.
   */
  customerPasswordChanged: defineEvent({
    subject: "events.customer.customer.password_changed",
    schema: CustomerRef.extend({
      passwordVersion: z.number().int().min(1),
      keptSession: z.string().nullable(),
      apiKeyIds: z.array(z.number().int().positive()),
    }),
  }),
  /** 7 days before a customer API key expires. */
  apiKeyExpiring: defineEvent({
    subject: "events.customer.api_key.expiring",
    schema: CustomerRef.extend({ keyId: z.string(), prefix: z.string(), expiresAt: z.string() }),
  }),
};
