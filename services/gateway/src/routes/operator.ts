import type { RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { type AccessRule, secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { errorResponse as errorBody } from "../errors.ts";
import { commonResponses, errorResponse } from "./responses.ts";

/** Operator routes take operator API keys only. */
const operatorKey: AccessRule = { apiKey: true };

/**
 * A route for operators: the api_key rule (401 without a key), then 403 for a customer's key,
 * saying what only operators may do (`refusal`).
 */
export function operatorRoute<R extends RouteConfig>(
  deps: GatewayDeps,
  route: R,
  refusal: string,
  ...middleware: MiddlewareHandler<GatewayEnv>[]
): R {
  return secured(operatorKey, deps.authorize, route, operatorOnly(refusal), ...middleware);
}

/** 403 with `refusal` for a caller that is not an operator. */
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
