import { z } from "@hono/zod-openapi";
import { Customer, ExportedApiKey } from "./customer.ts";
import { CustomerHistoryEntry } from "./history.ts";
import { OAuthGrant } from "./identity.ts";
import { Address, Order } from "./order.ts";

/** GET /customer/{username}/export (docs/identity.md "Data portability"). */
export const CustomerExport = z
  .object({
    exportedAt: z.string().openapi({ format: "date-time", description: "when the export was made" }),
    customer: Customer,
    addresses: z.array(Address).openapi({
      description:
        "the shipping addresses the customer's orders hold, as they read now, each once, newest first (an account keeps no address of its own)",
    }),
    orders: z.array(Order).openapi({ description: "every order the customer placed, newest first" }),
    apiKeys: z.array(ExportedApiKey).openapi({
      description: "every personal API key the account was issued, revoked ones too; never the key itself",
    }),
    oauthGrants: z
      .array(OAuthGrant)
      .openapi({ description: "the live grants the customer gave OAuth clients" }),
    history: z.array(CustomerHistoryEntry).openapi({
      description: "every change to the account, oldest first, as GET /customer/{username}/history pages it",
    }),
  })
  .openapi("CustomerExport", {
    description:
      "Everything the system holds about a customer, in one JSON document (data portability, GDPR Art. 20).",
  });
