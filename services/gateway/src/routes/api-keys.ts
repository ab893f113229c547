import { ApiKeyIdParam, ApiKeySummary, customerRpc, IssuedApiKey, UsernameParam } from "@cheese/contracts";
import { z } from "@hono/zod-openapi";
import { noStore } from "../middleware/no-store.ts";
import { forward } from "../rpc.ts";
import { actingCustomer } from "./customers.ts";
import { commonResponses, credentialResponses, errorResponse, jsonResponse } from "./responses.ts";
import { type Route, routes } from "./route.ts";

const route = routes({
  tags: ["API keys"],
  access: { bearer: true },
  use: [noStore],
  responses: {
    ...commonResponses,
    ...credentialResponses("another customer's keys, or credentials of the wrong kind"),
    404: errorResponse("customer or key not found"),
  },
});

const createKey = route(
  {
    method: "post",
    path: "/customer/{username}/apiKeys",
    operationId: "createApiKey",
    request: { params: UsernameParam },
    responses: {
      201: jsonResponse("the new key", IssuedApiKey),
      409: errorResponse("too many active keys"),
    },
  },
  forward(customerRpc.createApiKey, 201, (c) => ({
    username: c.req.valid("param").username,
    asCustomer: actingCustomer(c.get("caller"), false)!,
  })),
);

const listKeys = route(
  {
    method: "get",
    path: "/customer/{username}/apiKeys",
    operationId: "listApiKeys",
    request: { params: UsernameParam },
    responses: {
      200: jsonResponse("the keys", z.array(ApiKeySummary)),
    },
  },
  forward(
    customerRpc.listApiKeys,
    200,
    (c) => ({ ...c.req.valid("param"), asCustomer: actingCustomer(c.get("caller"), false)! }),
    (reply) => reply.keys,
  ),
);

const revokeKey = route(
  {
    method: "delete",
    path: "/customer/{username}/apiKeys/{id}",
    operationId: "revokeApiKey",
    request: { params: ApiKeyIdParam },
    responses: { 204: { description: "revoked" } },
  },
  forward(customerRpc.revokeApiKey, 204, (c) => {
    const { username, id } = c.req.valid("param");
    return { username, asCustomer: actingCustomer(c.get("caller"), false)!, keyId: id };
  }),
);

export const apiKeysRoutes: Route[] = [createKey, listKeys, revokeKey];
