import { catalogueRpc, Inventory } from "@cheese/contracts";
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { callService } from "../rpc.ts";
import { authResponses, readWithApiKey } from "./cheese-access.ts";
import { commonResponses } from "./responses.ts";

function getInventory(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      readWithApiKey,
      deps.authorize,
      createRoute({
        method: "get",
        path: "/store/inventory",
        operationId: "getInventory",
        tags: ["Store"],
        summary: "Count of cheeses per status",
        description:
          "How many cheeses of the catalogue have each status; every status is present, with 0 when none has it.",
        responses: {
          ...commonResponses,
          ...authResponses,
          200: {
            description: "inventory map: every status with its count",
            content: { "application/json": { schema: Inventory } },
          },
        },
      }),
    ),
    async (c) => {
      const counts = await callService(deps, c, catalogueRpc.inventory, {});
      return c.json(counts, 200);
    },
  );
}

export function inventoryRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  getInventory(api, deps);
}
