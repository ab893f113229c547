import type { OpenAPIHono, RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { type AccessRule, securityOf } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";

export type Api = OpenAPIHono<GatewayEnv>;

/** A route ready to register; a file's routes are listed in the order Hono tries them. */
export type Route = (api: Api, deps: GatewayDeps) => void;

/** A route's OpenAPI declaration, with who may call it and its own middleware. */
export interface Declaration extends RouteConfig {
  /** Who may call it: the operation's OpenAPI `security` and the middleware that enforces it. */
  access: AccessRule;
  /** The route's own middleware (idempotency, upload guards, ...), run only for callers let in. */
  use?: MiddlewareHandler<GatewayEnv>[];
}

/**
 * A route of the API: its declaration and its handler together, so it reads from its path to
 * its answer in one place. The access rule becomes the OpenAPI `security` and the first
 * middleware (401 with WWW-Authenticate without valid credentials, 403 without the scope), then
 * the route's own (`use`) follows; the one way a route gets middleware. The handler, and a
 * declaration that needs them (a check reading the clock), are made with the gateway's
 * dependencies when the route is registered.
 */
export function route<D extends Declaration>(
  declaration: D | ((deps: GatewayDeps) => D),
  handler: (deps: GatewayDeps) => RouteHandler<D, GatewayEnv>,
): Route {
  return (api, deps) => {
    const {
      access,
      use = [],
      ...config
    } = typeof declaration === "function" ? declaration(deps) : declaration;
    const security = securityOf(access);
    const middleware = [deps.authorize(access), ...use];
    api.openapi({ ...config, security, middleware } as RouteConfig, handler(deps) as never);
  };
}

/** Registers routes in the order given (Hono tries them in that order). */
export function register(api: Api, deps: GatewayDeps, routes: readonly Route[]): void {
  for (const each of routes) each(api, deps);
}
