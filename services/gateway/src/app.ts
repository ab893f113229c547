import type { RatePlan } from "@cheese/contracts";
import { CustomerDirectory } from "@cheese/customer/directory";
import { KnownRevocations } from "@cheese/customer/known-revocations";
import { type PlanLimits, SharedBuckets } from "@cheese/rate-limits";
import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { authenticate, type CustomerIdentity } from "./auth/authenticate.ts";
import { TokenVerifier } from "./auth/tokens.ts";
import { specPlanLimits } from "./config.ts";
import { consoleProxy } from "./console-proxy.ts";
import type { GatewayDeps } from "./deps.ts";
import type { GatewayEnv } from "./env.ts";
import { errorResponse, handleError } from "./errors.ts";
import { bodySize, jsonDepth } from "./middleware/body-size.ts";
import { observe } from "./middleware/observe.ts";
import { rateLimit } from "./middleware/rate-limit.ts";
import { documentationRoutes, registerSecuritySchemes } from "./openapi.ts";
import { MatchCache } from "./router.ts";
import { apiKeysRoutes } from "./routes/api-keys.ts";
import { cheeseRoutes } from "./routes/cheeses.ts";
import { customersRoutes } from "./routes/customers.ts";
import { deadLettersRoutes } from "./routes/dead-letters.ts";
import { exportRoutes } from "./routes/export.ts";
import { grantsRoutes } from "./routes/grants.ts";
import { healthRoutes } from "./routes/health.ts";
import { historyRoutes } from "./routes/history.ts";
import { inventoryRoutes } from "./routes/inventory.ts";
import { oauthRoutes } from "./routes/oauth.ts";
import { operatorSessionRoutes } from "./routes/operator-sessions.ts";
import { ordersRoutes } from "./routes/orders.ts";
import { register } from "./routes/route.ts";
import { webhookCatalogueRoutes } from "./routes/webhook-catalogue.ts";
import { webhooksRoutes } from "./routes/webhooks.ts";

export interface AppOptions {
  /** Rate plans; without them nothing is rate limited (unit tests of other behaviour). */
  rateLimits?: Record<RatePlan, PlanLimits>;
  /** Per-address limits of the browser pages (default `browserPageLimits`). */
  pageLimits?: PlanLimits;
}

/** The gateway's HTTP surface: `/v2/...` API routes, health, OAuth, and documentation. */
export function createApp(deps: GatewayDeps, options: AppOptions = {}): Hono<GatewayEnv> {
  // State shared with the other gateway replicas lives in NATS; these are this replica's views.
  const identity: CustomerIdentity = {
    revocations: new KnownRevocations(deps.bus, deps.logger, deps.rpcTimeoutMs, deps.clock),
    customers: new CustomerDirectory(deps.bus, deps.rpcTimeoutMs, deps.logger),
  };
  identity.revocations.start();
  identity.customers.followPlanChanges();

  const app = new Hono<GatewayEnv>({ router: new MatchCache() });
  app.use(observe(deps.logger));
  app.use(bodySize());
  const tokens = new TokenVerifier(deps.bus, deps.auth.issuer, deps.rpcTimeoutMs, deps.clock);
  app.use(authenticate({ ...deps.auth, tokens }, identity));
  if (options.rateLimits) {
    app.use(
      rateLimit({
        plans: options.rateLimits,
        buckets: new SharedBuckets(deps.bus, deps.logger, deps.clock),
        ...(options.pageLimits ? { pageLimits: options.pageLimits } : {}),
      }),
    );
  }
  app.use(jsonDepth);
  app.onError(handleError);
  app.notFound((c) => errorResponse(c, 404, `no route for ${c.req.method} ${c.req.path}`));

  // Routes check their requests themselves (`routes/request-checks.ts`): no validator of
  // @hono/zod-openapi's runs, so it has no hook.
  const api = new OpenAPIHono<GatewayEnv>();
  registerSecuritySchemes(api);
  const routeDeps = { ...deps, identity, plans: options.rateLimits ?? specPlanLimits };
  register(api, routeDeps, cheeseRoutes);
  register(api, routeDeps, inventoryRoutes);
  register(api, routeDeps, ordersRoutes);
  register(api, routeDeps, customersRoutes);
  register(api, routeDeps, apiKeysRoutes);
  register(api, routeDeps, grantsRoutes);
  webhookCatalogueRoutes(app, api, routeDeps);
  register(api, routeDeps, webhooksRoutes);
  register(api, routeDeps, deadLettersRoutes);
  register(api, routeDeps, operatorSessionRoutes);
  register(api, routeDeps, historyRoutes);
  register(api, routeDeps, exportRoutes);

  // Credentials checkable: on the API's /readyz and on the health port's (the probes').
  const revocations = () => identity.revocations.answers();
  deps.addCheck?.("revocations", revocations);
  healthRoutes(app, deps, revocations);
  oauthRoutes(app, api, deps);
  documentationRoutes(app, api);
  if (deps.consoleUrl) consoleProxy(app, deps.consoleUrl);
  app.route("/v2", api);
  return app;
}
