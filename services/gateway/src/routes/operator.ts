import { createMiddleware } from "hono/factory";
import type { AccessRule } from "../auth/access.ts";
import type { GatewayEnv } from "../env.ts";
import { errorResponse as errorBody } from "../errors.ts";
import { commonResponses, errorResponse } from "./responses.ts";

/**
 * Operator routes take API keys (401 without one), then `operatorOnly` answers 403 to a
 * customer's key: `access: operatorKey, use: [operatorOnly(refusal), ...]`.
 */
export const operatorKey: AccessRule = { apiKey: true };

/** 403 with `refusal` (what only operators may do) for a caller that is not an operator. */
export const operatorOnly = (refusal: string) =>
  createMiddleware<GatewayEnv>(async (c, next) => {
    if (c.get("caller").kind !== "operator") return errorBody(c, 403, refusal);
    return next();
  });

/** The answers every operator route may give besides its own. */
export const operatorResponses = {
  ...commonResponses,
  401: errorResponse("missing or invalid API key"),
  403: errorResponse("not an operator API key"),
};
