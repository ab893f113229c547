import {
  Address,
  Customer,
  CustomerHistoryEntry,
  customerRpc,
  ExportedApiKey,
  OAuthGrant,
  Order,
  orderingRpc,
  UsernameParam,
} from "@cheese/contracts";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { noStore } from "../middleware/no-store.ts";
import { callService } from "../rpc.ts";
import { actingCustomer } from "./customers.ts";
import { commonResponses, errorResponse } from "./responses.ts";

const CustomerExport = z
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

function exportCustomer(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      { apiKey: true, bearer: true },
      deps.authorize,
      createRoute({
        method: "get",
        path: "/customer/{username}/export",
        operationId: "exportCustomerData",
        tags: ["Customers"],
        summary:
          "Everything the system holds about a customer, as one JSON document (the customer, or an operator key)",
        description:
          "The account, the shipping addresses of its orders, its orders, its API keys (ids, prefixes, expiry; never a key), its OAuth grants and the account's whole history. " +
          "A customer exports only its own account (anyone else's is 403); an operator API key any. An erased account is 404.",
        request: { params: UsernameParam },
        responses: {
          ...commonResponses,
          200: {
            description: "the export",
            content: { "application/json": { schema: CustomerExport } },
          },
          401: errorResponse("missing or invalid credentials; see WWW-Authenticate"),
          403: errorResponse("another customer's account, or credentials of the wrong kind"),
          404: errorResponse("customer not found, or erased"),
        },
      }),
      noStore,
    ),
    async (c) => {
      const { username } = c.req.valid("param");
      const exportedAt = deps.clock.now().toISOString();
      const account = await callService(deps, c, customerRpc.export, {
        username,
        asCustomer: actingCustomer(c.get("caller"), true),
      });
      const customerId = account.customer.id;
      const { orders, addresses } = await callService(deps, c, orderingRpc.customerOrders, { customerId });
      return c.json(
        {
          exportedAt,
          customer: account.customer,
          addresses,
          orders,
          apiKeys: account.apiKeys,
          oauthGrants: account.oauthGrants,
          history: account.history,
        },
        200,
      );
    },
  );
}

/**
 * GET /customer/{username}/export (docs/identity.md "Data portability"): the customer service
 * decides who may export and answers the account's part with its OAuth grants; ordering the orders.
 */
export function exportRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  exportCustomer(api, deps);
}
