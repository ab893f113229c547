import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { authenticate } from "./auth/authenticate.ts";
import type { GatewayDeps, GatewayEnv } from "./env.ts";
import { errorResponse, handleError, validationFailure } from "./errors.ts";
import { requestId } from "./middleware/request-id.ts";
import { documentationRoutes, registerSecuritySchemes } from "./openapi.ts";
import { apiKeysRoutes } from "./routes/api-keys.ts";
import { cheeseRoutes } from "./routes/cheeses.ts";
import { customersRoutes } from "./routes/customers.ts";
import { healthRoutes } from "./routes/health.ts";
import { inventoryRoutes } from "./routes/inventory.ts";
import { oauthRoutes } from "./routes/oauth.ts";
import { ordersRoutes } from "./routes/orders.ts";
import { webhooksRoutes } from "./routes/webhooks.ts";

/** The gateway's HTTP surface: `/v2/...` API routes, health, and documentation. */
export function createApp(deps: GatewayDeps): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.use(requestId(deps.logger));
  app.use(authenticate(deps.auth));
  app.onError(handleError);
  app.notFound((c) => errorResponse(c, 404, `no route for ${c.req.method} ${c.req.path}`));

  const api = new OpenAPIHono<GatewayEnv>({
    defaultHook: (result, c) =>
      result.success ? undefined : validationFailure(c, result.target, result.error),
  });
  registerSecuritySchemes(api);
  cheeseRoutes(api, deps);
  inventoryRoutes(api, deps);
  ordersRoutes(api, deps);
  customersRoutes(api, deps);
  apiKeysRoutes(api, deps);
  webhooksRoutes(api, deps);

  healthRoutes(app, deps);
  oauthRoutes(app, deps);
  documentationRoutes(app, api);
  app.route("/v2", api);
  return app;
}
