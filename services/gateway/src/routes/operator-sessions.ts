import { identityRpc, OperatorSession, OperatorSessionOpened } from "@cheese/contracts";
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { secured } from "../auth/access.ts";
import type { Revocations } from "../auth/revocations.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { noStore } from "../middleware/no-store.ts";
import { callService } from "../rpc.ts";
import { operatorResponses, operatorRoute } from "./operator.ts";
import { commonResponses, errorResponse } from "./responses.ts";

/**
 * Operator sessions (docs/security.md "Operator console"): an operator key opens one and gets a
 * token good for nothing but checking and ending that session. The console keeps it in its
 * cookie, checks it on every page and ends it at sign-out; ended, it is refused by every gateway
 * within a second (the shared revocation list), whichever replica the next page reaches.
 */
function openSession(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    operatorRoute(
      deps,
      createRoute({
        method: "post",
        path: "/operator/sessions",
        operationId: "openOperatorSession",
        tags: ["Operator sessions"],
        summary: "Open an operator session: a token for 8 hours",
        description:
          "With an operator API key. The token only checks and ends this session (GET and DELETE /operator/session); the API's other operations still take the key.",
        responses: {
          ...operatorResponses,
          201: {
            description: "the session and its token",
            content: { "application/json": { schema: OperatorSessionOpened } },
          },
        },
      }),
      "only operator API keys open operator sessions",
      noStore,
    ),
    async (c) => {
      const operatorId = c.get("caller").id;
      // The customer service, the issuer of every token, signs it.
      const { token, expiresAt } = await callService(deps, c, identityRpc.startOperatorSession, {
        operatorId,
        issuer: deps.auth.issuer,
      });
      return c.json({ token, operatorId, expiresAt }, 201);
    },
  );
}

const sessionResponses = {
  ...commonResponses,
  401: errorResponse("no session token, or one that expired, was ended, or whose operator key is gone"),
  403: errorResponse("credentials other than an operator session token"),
};

function readSession(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      { operatorSession: true },
      deps.authorize,
      createRoute({
        method: "get",
        path: "/operator/session",
        operationId: "getOperatorSession",
        tags: ["Operator sessions"],
        summary: "The operator session the token belongs to, while it is in force",
        description: "401 once it expired, was ended on any gateway, or its operator key left API_KEYS.",
        responses: {
          ...sessionResponses,
          200: { description: "the session", content: { "application/json": { schema: OperatorSession } } },
        },
      }),
      noStore,
    ),
    (c) => {
      const { id, token } = c.get("caller");
      return c.json({ operatorId: id, expiresAt: new Date(token!.exp * 1000).toISOString() }, 200);
    },
  );
}

function endSession(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps, revocations: Revocations): void {
  api.openapi(
    secured(
      { operatorSession: true },
      deps.authorize,
      createRoute({
        method: "delete",
        path: "/operator/session",
        operationId: "endOperatorSession",
        tags: ["Operator sessions"],
        summary: "End the operator session: its token stops working on every gateway within a second",
        description:
          "The console's sign-out. The token is revoked until it would have expired; the operator key and its other sessions go on working.",
        responses: { ...sessionResponses, 204: { description: "ended" } },
      }),
      noStore,
    ),
    async (c) => {
      const { token } = c.get("caller");
      await revocations.revokeToken(token!.jti, token!.exp * 1000);
      return c.body(null, 204);
    },
  );
}

export function operatorSessionRoutes(
  api: OpenAPIHono<GatewayEnv>,
  deps: GatewayDeps,
  revocations: Revocations,
): void {
  openSession(api, deps);
  readSession(api, deps);
  endSession(api, deps, revocations);
}
