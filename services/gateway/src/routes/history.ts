import * as contracts from "@cheese/contracts";
import type { AccessRule } from "../auth/access.ts";
import { noStore } from "../middleware/no-store.ts";
import { forward } from "../rpc.ts";
import { readWithApiKey } from "./cheese-access.ts";
import { actingCustomer } from "./customers.ts";
import { actorOf, readOrders } from "./orders.ts";
import { commonResponses, credentialResponses, errorResponse, jsonResponse } from "./responses.ts";
import { type Route, routes } from "./route.ts";

/**
 * The history of an aggregate: every change to a cheese, an order or one's own account, oldest
 * first, as `{type, at, data}` with public facts only. Paginated like every list.
 */
const route = routes({ responses: commonResponses });

const ownAccount: AccessRule = { apiKey: true, bearer: true };

const cheeseHistory = route(
  {
    method: "get",
    path: "/cheeses/{cheeseId}/history",
    operationId: "getCheeseHistory",
    tags: ["Cheeses"],
    access: readWithApiKey,
    request: { params: contracts.CheeseIdParam, query: contracts.HistoryQuery },
    responses: {
      200: jsonResponse("a page of the cheese's history", contracts.CheeseHistory),
      404: errorResponse("no cheese ever had this id"),
    },
  },
  forward(contracts.historyRpc.cheese, 200, (c) => ({ ...c.req.valid("param"), ...c.req.valid("query") })),
);

const orderHistory = route(
  {
    method: "get",
    path: "/store/order/{orderId}/history",
    operationId: "getOrderHistory",
    tags: ["Store"],
    access: readOrders,
    use: [noStore],
    request: { params: contracts.OrderIdParam, query: contracts.HistoryQuery },
    responses: {
      200: jsonResponse("a page of the order's history", contracts.OrderHistory),
      404: errorResponse("order not found"),
    },
  },
  forward(contracts.historyRpc.order, 200, (c) => ({
    ...c.req.valid("param"),
    actor: actorOf(c.get("caller")),
    ...c.req.valid("query"),
  })),
);

const customerHistory = route(
  {
    method: "get",
    path: "/customer/{username}/history",
    operationId: "getCustomerHistory",
    tags: ["Customers"],
    access: ownAccount,
    use: [noStore],
    request: { params: contracts.UsernameParam, query: contracts.HistoryQuery },
    responses: {
      200: jsonResponse("a page of the account's history", contracts.CustomerHistory),
      ...credentialResponses("only the customer may read their account's history"),
      404: errorResponse("customer not found"),
    },
  },
  forward(contracts.historyRpc.customer, 200, (c) => ({
    ...c.req.valid("param"),
    asCustomer: actingCustomer(c.get("caller"), false)!,
    ...c.req.valid("query"),
  })),
);

export const historyRoutes: Route[] = [cheeseHistory, orderHistory, customerHistory];
