import { CustomerExport, customerRpc, orderingRpc, UsernameParam } from "@cheese/contracts";
import { noStore } from "../middleware/no-store.ts";
import { callService } from "../rpc.ts";
import { actingCustomer } from "./customers.ts";
import { commonResponses, credentialResponses, errorResponse, jsonResponse } from "./responses.ts";
import { type Route, route } from "./route.ts";

const exportCustomer = route(
  {
    method: "get",
    path: "/customer/{username}/export",
    operationId: "exportCustomerData",
    tags: ["Customers"],
    access: { apiKey: true, bearer: true },
    use: [noStore],
    request: { params: UsernameParam },
    responses: {
      ...commonResponses,
      200: jsonResponse("the export", CustomerExport),
      ...credentialResponses("another customer's account, or credentials of the wrong kind"),
      404: errorResponse("customer not found, or erased"),
    },
  },
  (deps) => async (c) => {
    const { username } = c.req.valid("param");
    const exportedAt = deps.clock.now().toISOString();
    const { customer, apiKeys, oauthGrants, history } = await callService(deps, c, customerRpc.export, {
      username,
      asCustomer: actingCustomer(c.get("caller"), true),
    });
    const { orders, addresses } = await callService(deps, c, orderingRpc.customerOrders, {
      customerId: customer.id,
    });
    return c.json({ exportedAt, customer, addresses, orders, apiKeys, oauthGrants, history }, 200);
  },
);

/**
 * GET /customer/{username}/export (docs/identity.md "Data portability"): the customer service
 * decides who may export and answers the account's part with its OAuth grants; ordering the orders.
 */
export const exportRoutes: Route[] = [exportCustomer];
