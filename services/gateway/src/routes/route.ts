import { type OperationId, operationText, type RatePlan } from "@cheese/contracts";
import type { PlanLimits } from "@cheese/rate-limits";
import type { OpenAPIHono, RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { Handler, Hono, MiddlewareHandler } from "hono";
import { type AccessRule, securityOf } from "../auth/access.ts";
import type { CustomerIdentity } from "../auth/authenticate.ts";
import { authorize } from "../auth/authorize.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { requestChecks } from "./request-checks.ts";

export type Api = OpenAPIHono<GatewayEnv>;

/** A route ready to register; a file's routes are listed in the order Hono tries them. */
export type Route = (api: Api, deps: RouteDeps) => void;

/** What routes are made with: the gateway's dependencies, this replica's views of identity, the plans. */
export type RouteDeps = GatewayDeps & { identity: CustomerIdentity; plans: Record<RatePlan, PlanLimits> };

/**
 * An OpenAPI operation as the gateway declares it: what its code depends on. Its summary and
 * description are the contracts' `operationText` of its operationId, put on by {@link described}.
 */
export type Operation = Omit<RouteConfig, "operationId" | "summary" | "description"> & {
  operationId: OperationId;
  summary?: never;
  description?: never;
};

/** The operation with its summary and description, after its tags as every operation has them. */
function described(operation: Operation): RouteConfig {
  const { method, path, operationId, tags, ...rest } = operation;
  return { method, path, operationId, tags, ...operationText[operationId], ...rest };
}

/**
 * An operation served at the gateway root, outside /v2: public, with the root as its server in the
 * document, and answered by `handler` (no validation of its own).
 */
export function atRoot(
  app: Hono<GatewayEnv>,
  api: Api,
  operation: Omit<Operation, "servers" | "security">,
  handler: Handler<GatewayEnv>,
): void {
  const servers = [{ url: "/", description: "the gateway root (outside /v2)" }];
  const config = described({ ...operation, servers, security: [] });
  api.openAPIRegistry.registerPath(config);
  app.on(config.method.toUpperCase(), config.path, handler);
}

/** What a route declares besides its OpenAPI operation: who may call it and its own middleware. */
interface Access {
  /** Who may call it: the operation's OpenAPI `security` and the middleware that enforces it. */
  access: AccessRule;
  /** The route's own middleware (idempotency, upload guards, ...), run only for callers let in. */
  use?: MiddlewareHandler<GatewayEnv>[];
}

/** What the routes of one area share: their tags, access rule, first middleware, answers. */
type Shared = Partial<Access> & Pick<Partial<Operation>, "tags" | "responses">;

/** A route's declaration: the OpenAPI operation, with its access rule unless its area states it. */
type Declaration<S extends Shared> = Operation &
  Partial<Access> &
  (S extends Pick<Access, "access"> ? {} : Access);

/**
 * Makes the routes of an area (`routes({ tags, access, use, responses })`); `route` is the one of
 * an area that shares nothing. A route is its declaration and its handler together, so it reads
 * from its path to its answer in one place. The access rule becomes the OpenAPI `security` and
 * the first middleware (401 with WWW-Authenticate without valid credentials, 403 without the
 * scope); the area's middleware, then the route's own (`use`), follow it, so they run only for
 * callers let in: the one way a route gets middleware. The area's responses are the route's too.
 * The handler, and a declaration that needs them (a check reading the clock), are made with the
 * gateway's dependencies when the route is registered.
 */
export function routes<S extends Shared>(shared: S) {
  return <D extends Declaration<S>>(
    declaration: D | ((deps: RouteDeps) => D),
    handler: (deps: RouteDeps) => RouteHandler<D, GatewayEnv>,
  ): Route =>
    (api, deps) => {
      const own = typeof declaration === "function" ? declaration(deps) : declaration;
      const { access = shared.access!, use = [], responses, ...operation } = own;
      const config: RouteConfig = {
        ...described({
          ...operation,
          tags: operation.tags ?? shared.tags,
          responses: { ...shared.responses, ...responses },
        }),
        security: securityOf(access),
      };
      // The document gets the whole declaration; @hono/zod-openapi is given none of it to check
      // (requestChecks checks the query, path, header and JSON body).
      api.openAPIRegistry.registerPath(config);
      const [first, ...later] = [...(shared.use ?? []), ...use, ...requestChecks(config.request)];
      const served = {
        ...config,
        request: undefined,
        hide: true,
        middleware: first ? [admitted(authorize(access), first), ...later] : [authorize(access)],
      };
      api.openapi(served as RouteConfig, handler(deps) as never);
    };
}

export const route = routes({});

/**
 * The access rule's middleware and the route's first one after it, as one step of Hono's compose
 * (each step is an async dispatch and its await, whatever the middleware does). The access rule
 * does nothing after `next()`, so whatever the other throws reaches Hono's error handler as it
 * did from a step of its own.
 */
function admitted(access: MiddlewareHandler<GatewayEnv>, then: MiddlewareHandler<GatewayEnv>) {
  // `then` answers (a refusal) or passes on: what it returns goes back to Hono as `access`'s.
  const both: MiddlewareHandler<GatewayEnv> = (c, next) => access(c, () => then(c, next) as Promise<void>);
  return both;
}

/** Registers routes in the order given (Hono tries them in that order). */
export function register(api: Api, deps: RouteDeps, list: readonly Route[]): void {
  for (const each of list) each(api, deps);
}
