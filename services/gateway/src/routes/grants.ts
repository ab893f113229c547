import { identityRpc, OAuthGrant, UsernameParam } from "@cheese/contracts";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import { secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { Caller, GatewayEnv } from "../env.ts";
import { noStore } from "../middleware/no-store.ts";
import { callService } from "../rpc.ts";
import { commonResponses, errorResponse } from "./responses.ts";

const GrantIdParam = UsernameParam.extend({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be a grant id")
    .openapi({ param: { name: "id", in: "path" } }),
});

const credentialResponses = {
  401: errorResponse("missing or invalid credentials; see WWW-Authenticate"),
  403: errorResponse("another customer's grants, or credentials of the wrong kind"),
};

const listGrants = (deps: GatewayDeps) =>
  secured(
    { bearer: true },
    deps.authorize,
    createRoute({
      method: "get",
      path: "/customer/{username}/grants",
      operationId: "listOAuthGrants",
      tags: ["OAuth 2.0"],
      summary: "List the OAuth grants one gave to clients that are still live",
      description:
        "Each client the customer signed in to and allowed, with the scopes granted and when it was last used; revoking one ends its tokens.",
      request: { params: UsernameParam },
      responses: {
        ...commonResponses,
        ...credentialResponses,
        200: {
          description: "the grants, oldest first",
          content: { "application/json": { schema: z.array(OAuthGrant) } },
        },
      },
    }),
    noStore,
  );

const revokeGrant = (deps: GatewayDeps) =>
  secured(
    { bearer: true },
    deps.authorize,
    createRoute({
      method: "delete",
      path: "/customer/{username}/grants/{id}",
      operationId: "revokeOAuthGrant",
      tags: ["OAuth 2.0"],
      summary: "Revoke a grant: its access and refresh tokens stop working on every gateway within a second",
      description:
        "Ends the grant: its access tokens and its refresh token stop working on every gateway. The client must ask the customer again.",
      request: { params: GrantIdParam },
      responses: {
        ...commonResponses,
        ...credentialResponses,
        204: { description: "revoked" },
        404: errorResponse("no live grant of this customer has that id"),
      },
    }),
    noStore,
  );

/**
 * A customer's OAuth grants (docs/identity.md "OAuth grants"): list them, revoke one. Grants live
 * in the customer service, with the authorization server; a customer reaches only its own (403
 * for any other username, existing or not, as everywhere under /customer).
 */
export function grantsRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(listGrants(deps), async (c) => {
    const customerId = ownCustomer(c.get("caller"), c.req.valid("param").username);
    const { grants } = await callService(deps, c, identityRpc.listGrants, { customerId });
    return c.json(grants, 200);
  });

  api.openapi(revokeGrant(deps), async (c) => {
    const { username, id } = c.req.valid("param");
    const customerId = ownCustomer(c.get("caller"), username);
    await callService(deps, c, identityRpc.revokeGrant, { customerId, grantId: id });
    return c.body(null, 204);
  });
}

/** The caller's customer id when `username` is the caller's own (the principal's current name). */
function ownCustomer(caller: Caller, username: string): number {
  if (caller.kind !== "customer" || caller.customer?.username.toLowerCase() !== username.toLowerCase()) {
    throw new HTTPException(403, { message: "a customer may only access its own account" });
  }
  return Number(caller.customer.id);
}
