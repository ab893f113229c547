import { GrantIdParam, identityRpc, OAuthGrant, UsernameParam } from "@cheese/contracts";
import { z } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import type { Caller } from "../env.ts";
import { noStore } from "../middleware/no-store.ts";
import { forward } from "../rpc.ts";
import { commonResponses, credentialResponses, errorResponse, jsonResponse } from "./responses.ts";
import { type Route, routes } from "./route.ts";

/**
 * A customer's OAuth grants (docs/identity.md "OAuth grants"): list them, revoke one. Grants live
 * in the customer service, with the authorization server; a customer reaches only its own (403
 * for any other username, existing or not, as everywhere under /customer).
 */
const route = routes({
  tags: ["OAuth 2.0"],
  access: { bearer: true },
  use: [noStore],
  responses: {
    ...commonResponses,
    ...credentialResponses("another customer's grants, or credentials of the wrong kind"),
  },
});

const listGrants = route(
  {
    method: "get",
    path: "/customer/{username}/grants",
    operationId: "listOAuthGrants",
    request: { params: UsernameParam },
    responses: {
      200: jsonResponse("the grants, oldest first", z.array(OAuthGrant)),
    },
  },
  forward(
    identityRpc.listGrants,
    200,
    (c) => ({ customerId: ownCustomer(c.get("caller"), c.req.valid("param").username) }),
    (reply) => reply.grants,
  ),
);

const revokeGrant = route(
  {
    method: "delete",
    path: "/customer/{username}/grants/{id}",
    operationId: "revokeOAuthGrant",
    request: { params: GrantIdParam },
    responses: {
      204: { description: "revoked" },
      404: errorResponse("no live grant of this customer has that id"),
    },
  },
  forward(identityRpc.revokeGrant, 204, (c) => {
    const { username, id } = c.req.valid("param");
    return { customerId: ownCustomer(c.get("caller"), username), grantId: id };
  }),
);

export const grantsRoutes: Route[] = [listGrants, revokeGrant];

/** The caller's customer id when `username` is the caller's own (the principal's current name). */
function ownCustomer(caller: Caller, username: string): number {
  if (caller.kind !== "customer" || caller.customer?.username.toLowerCase() !== username.toLowerCase()) {
    throw new HTTPException(403, { message: "a customer may only access its own account" });
  }
  return Number(caller.customer.id);
}
