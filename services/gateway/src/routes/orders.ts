import * as contracts from "@cheese/contracts";
import { HTTPException } from "hono/http-exception";
import type { AccessRule } from "../auth/access.ts";
import type { Caller } from "../env.ts";
import { noStore } from "../middleware/no-store.ts";
import {
  answerPassed,
  callService,
  forward,
  idempotency,
  idempotencyOf,
  type JsonText,
  passService,
  replayedHeader,
} from "../rpc.ts";
import { pageHeaders } from "./pages.ts";
import { commonResponses, errorResponse, json, jsonBody, validationErrorResponse } from "./responses.ts";
import { type Route, routes } from "./route.ts";

const route = routes({ tags: ["Store"], use: [noStore], responses: commonResponses });

const orderJson = { "application/json": { schema: contracts.Order } };

/** Reading an order: api_key, plus read:orders tokens and customers' bearer tokens. */
export const readOrders: AccessRule = { apiKey: true, bearer: true, oauth: ["read:orders"] };
const writeOrders: AccessRule = { oauth: ["write:orders"] };
/**
 * Fulfilment: an operator API key, or write:orders on a client-credentials token. The order
 * decider holds the rule (only operators ship or deliver); the gateway states it as the route's
 * access rule, so a customer is refused for who it is (403) before its body is looked at. The
 * console's operators act with their operator key, so the console can do nothing the key cannot.
 */
const fulfilOrders: AccessRule = { apiKey: true, oauth: ["write:orders"], callers: ["operator", "client"] };

const placeOrder = route(
  {
    method: "post",
    path: "/store/order",
    operationId: "placeOrder",
    access: writeOrders,
    use: [idempotency],
    request: { headers: contracts.IdempotencyKeyHeaders, body: jsonBody(contracts.OrderInput) },
    responses: {
      201: {
        description: "the order, status placed",
        headers: { Location: { description: "URL of the order", schema: { type: "string" } } },
        content: orderJson,
      },
      409: errorResponse("the Idempotency-Key was used with a different request"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const caller = c.get("caller");
    // The ordering service keeps the key's record: a repeat is answered as the first request was.
    const reply = await callService(deps, c, contracts.orderingRpc.placeOrder, {
      fields: contracts.toOrderFields(c.req.valid("json")),
      owner: { customerId: actorOf(caller).customerId, ownerId: caller.id },
      ...idempotencyOf(c),
    });
    const { order } = reply;
    return answerPassed(c, JSON.stringify(order) as JsonText<typeof order>, 201, {
      Location: `${deps.publicUrl}/v2/store/order/${order.id}`,
      ...replayedHeader(reply),
    });
  },
);

const getOrder = route(
  (deps) => ({
    method: "get",
    path: "/store/order/{orderId}",
    operationId: "getOrderById",
    access: readOrders,
    request: { params: contracts.OrderIdParam, query: contracts.asOfQuery(deps.clock) },
    responses: {
      200: { description: "the order", headers: contracts.asOfHeader, content: orderJson },
      404: errorResponse("order not found (with asOf: not there at that moment)"),
    },
  }),
  (deps) => async (c) => {
    const { orderId } = c.req.valid("param");
    const { asOf } = c.req.valid("query");
    if (asOf !== undefined) {
      const { order, at } = await callService(deps, c, contracts.orderingRpc.getOrderAsOf, {
        orderId,
        actor: actorOf(c.get("caller")),
        asOf,
      });
      return c.json(order, 200, { "X-Cheese-As-Of": at });
    }
    const { body } = await passService(deps, c, contracts.orderingRpc.getOrder, {
      orderId,
      actor: actorOf(c.get("caller")),
    });
    return answerPassed(c, body, 200);
  },
);

const listOrders = route(
  {
    method: "get",
    path: "/store/orders",
    operationId: "listOrders",
    access: readOrders,
    request: { query: contracts.OrderListQuery },
    responses: {
      200: {
        description: "a page of orders",
        headers: {
          "X-Total-Count": { description: "equals total", schema: { type: "integer" } },
          Link: { description: 'rel="next" when there is a next page', schema: { type: "string" } },
        },
        content: json(contracts.OrderList),
      },
    },
  },
  (deps) => async (c) => {
    const { limit, cursor, status } = c.req.valid("query");
    const { meta, body } = await passService(deps, c, contracts.orderingRpc.listOrders, {
      actor: actorOf(c.get("caller")),
      limit,
      ...(cursor !== undefined ? { cursor } : {}),
      ...(status ? { statuses: status } : {}),
    });
    return answerPassed(c, body, 200, pageHeaders(deps, c, meta));
  },
);

const cancelOrder = route(
  {
    method: "delete",
    path: "/store/order/{orderId}",
    operationId: "deleteOrder",
    access: writeOrders,
    request: { params: contracts.OrderIdParam },
    responses: {
      204: { description: "cancelled" },
      404: errorResponse("order not found"),
      409: errorResponse("order already shipped"),
    },
  },
  forward(contracts.orderingRpc.cancelOrder, 204, (c) => ({
    ...c.req.valid("param"),
    actor: actorOf(c.get("caller")),
  })),
);

/** Shipping and delivering: operators only (`fulfilOrders`), answering the order. */
const fulfilled = { description: "the order", content: orderJson };
const fulfilmentRoute = routes({
  tags: ["Store"],
  access: fulfilOrders,
  use: [noStore],
  responses: {
    ...commonResponses,
    403: errorResponse("only operators may do this"),
    404: errorResponse("order not found"),
  },
});

const shipOrder = fulfilmentRoute(
  {
    method: "post",
    path: "/store/order/{orderId}/ship",
    operationId: "shipOrder",
    request: { params: contracts.OrderIdParam, body: jsonBody(contracts.ShipmentInput) },
    responses: {
      200: fulfilled,
      409: errorResponse("order is not approved"),
      422: validationErrorResponse,
    },
  },
  forward(
    contracts.orderingRpc.shipOrder,
    200,
    (c) => ({ ...c.req.valid("param"), actor: actorOf(c.get("caller")), ...c.req.valid("json") }),
    (reply) => reply.order,
  ),
);

const deliverOrder = fulfilmentRoute(
  {
    method: "post",
    path: "/store/order/{orderId}/deliver",
    operationId: "deliverOrder",
    request: { params: contracts.OrderIdParam },
    responses: { 200: fulfilled, 409: errorResponse("order is not shipped") },
  },
  forward(
    contracts.orderingRpc.deliverOrder,
    200,
    (c) => ({ ...c.req.valid("param"), actor: actorOf(c.get("caller")) }),
    (reply) => reply.order,
  ),
);

export const ordersRoutes: Route[] = [placeOrder, getOrder, listOrders, cancelOrder, shipOrder, deliverOrder];

/** Customers act on their own orders; operator keys and operator clients on all. */
export function actorOf(caller: Caller): contracts.OrderActor {
  if (caller.kind === "operator" || caller.kind === "client") return { kind: caller.kind, customerId: null };
  const customerId = Number(caller.customer?.id);
  if (caller.kind !== "customer" || !Number.isSafeInteger(customerId) || customerId < 1) {
    throw new HTTPException(403, { message: "these credentials name no customer" });
  }
  return { kind: "customer", customerId };
}
