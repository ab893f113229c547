import { identityRpc, OperatorSession, OperatorSessionOpened } from "@cheese/contracts";
import { noStore } from "../middleware/no-store.ts";
import { callService } from "../rpc.ts";
import { operatorKey, operatorOnly, operatorResponses } from "./operator.ts";
import { commonResponses, errorResponse, jsonResponse } from "./responses.ts";
import { type Route, route } from "./route.ts";

/**
 * Operator sessions (docs/security.md "Operator console"): an operator key opens one and gets a
 * token good for nothing but checking and ending that session. The console keeps it in its
 * cookie, checks it on every page and ends it at sign-out; ended, it is refused by every gateway
 * within a second (the shared revocation list), whichever replica the next page reaches.
 */
const tags = ["Operator sessions"];

const openSession = route(
  {
    method: "post",
    path: "/operator/sessions",
    operationId: "openOperatorSession",
    tags,
    access: operatorKey,
    use: [operatorOnly("only operator API keys open operator sessions"), noStore],
    responses: {
      ...operatorResponses,
      201: jsonResponse("the session and its token", OperatorSessionOpened),
    },
  },
  (deps) => async (c) => {
    const operatorId = c.get("caller").id;
    // The customer service, the issuer of every token, signs it.
    const { token, expiresAt } = await callService(deps, c, identityRpc.startOperatorSession, {
      operatorId,
      issuer: deps.auth.issuer,
    });
    return c.json({ token, operatorId, expiresAt }, 201);
  },
);

const sessionResponses = {
  ...commonResponses,
  401: errorResponse("no session token, or one that expired, was ended, or whose operator key is gone"),
  403: errorResponse("credentials other than an operator session token"),
};

const readSession = route(
  {
    method: "get",
    path: "/operator/session",
    operationId: "getOperatorSession",
    tags,
    access: { operatorSession: true },
    use: [noStore],
    responses: { ...sessionResponses, 200: jsonResponse("the session", OperatorSession) },
  },
  () => (c) => {
    const { id, token } = c.get("caller");
    return c.json({ operatorId: id, expiresAt: new Date(token!.exp * 1000).toISOString() }, 200);
  },
);

const endSession = route(
  {
    method: "delete",
    path: "/operator/session",
    operationId: "endOperatorSession",
    tags,
    access: { operatorSession: true },
    use: [noStore],
    responses: { ...sessionResponses, 204: { description: "ended" } },
  },
  (deps) => async (c) => {
    const { token } = c.get("caller");
    await deps.identity.revocations.revokeToken(token!.jti, token!.exp * 1000);
    return c.body(null, 204);
  },
);

export const operatorSessionRoutes: Route[] = [openSession, readSession, endSession];
