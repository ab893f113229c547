import {
  Cheese,
  CheeseList,
  CheeseListQuery,
  type CheeseStatus,
  catalogueRpc,
  FindByStatusQuery,
  FindByTagsQuery,
  splitList,
} from "@cheese/contracts";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { readThrough } from "../read-cache.ts";
import { answerPassed, passService } from "../rpc.ts";
import { authResponses } from "./cheese-access.ts";
import { pageHeaders } from "./pages.ts";
import { commonResponses, errorResponse } from "./responses.ts";

const cheeseArray = { "application/json": { schema: z.array(Cheese) } };

function listCheeses(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      { apiKey: true, oauth: ["read:cheeses"] },
      deps.authorize,
      createRoute({
        method: "get",
        path: "/cheeses",
        operationId: "listCheeses",
        tags: ["Cheeses"],
        summary: "List cheeses (paginated)",
        description:
          "Keyset pagination: nextCursor stays valid while cheeses are added or removed. A request with a " +
          "cursor may leave out sort and filters (the cursor's apply); stating different ones is 400.",
        request: { query: CheeseListQuery },
        responses: {
          ...commonResponses,
          ...authResponses,
          200: {
            description: "a page of cheeses",
            headers: {
              "X-Total-Count": { description: "= total", schema: { type: "integer" } },
              Link: {
                description: 'RFC 8288; rel="next" when there is a next page',
                schema: { type: "string" },
              },
            },
            content: { "application/json": { schema: CheeseList } },
          },
        },
      }),
    ),
    async (c) => {
      const query = c.req.valid("query");
      const payload = {
        limit: query.limit,
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        ...(query.sort !== undefined ? { sort: query.sort } : {}),
        filters: {
          ...(query.status !== undefined ? { status: splitList(query.status) as CheeseStatus[] } : {}),
          ...(query.tags !== undefined ? { tags: splitList(query.tags) } : {}),
          ...(query.category !== undefined ? { category: query.category } : {}),
          ...(query.organic !== undefined ? { organic: query.organic === "true" } : {}),
        },
      };
      const { meta, body } = await readThrough(deps.readCache, { read: "listCheeses", payload }, () =>
        passService(deps, c, catalogueRpc.listCheeses, payload),
      );
      return answerPassed(c, body, 200, pageHeaders(deps, c, meta));
    },
  );
}

function findByStatus(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      { oauth: ["read:cheeses"] },
      deps.authorize,
      createRoute({
        method: "get",
        path: "/cheeses/findByStatus",
        operationId: "findCheesesByStatus",
        tags: ["Cheeses"],
        summary: "Find cheeses by status",
        description:
          "Every cheese with any of the statuses given (comma separated), as one unpaginated array; an unknown status is 400.",
        request: { query: FindByStatusQuery },
        responses: {
          ...commonResponses,
          ...authResponses,
          200: { description: "cheeses with any of the statuses", content: cheeseArray },
          400: errorResponse("invalid status value"),
        },
      }),
    ),
    async (c) => {
      const { status } = c.req.valid("query");
      const { body } = await readThrough(deps.readCache, { read: "findCheeses", payload: { status } }, () =>
        passService(deps, c, catalogueRpc.findCheeses, { status }),
      );
      return answerPassed(c, body, 200);
    },
  );
}

function findByTags(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      { oauth: ["read:cheeses"] },
      deps.authorize,
      createRoute({
        method: "get",
        path: "/cheeses/findByTags",
        operationId: "findCheesesByTags",
        tags: ["Cheeses"],
        summary: "Find cheeses by tags",
        description: "Deprecated: use GET /cheeses with the tags query parameter.",
        deprecated: true,
        request: { query: FindByTagsQuery },
        responses: {
          ...commonResponses,
          ...authResponses,
          200: {
            description: "cheeses with any of the tags",
            headers: {
              Deprecation: { description: "true", schema: { type: "string" } },
              Link: {
                description: 'rel="successor-version": GET /cheeses?tags=',
                schema: { type: "string" },
              },
            },
            content: cheeseArray,
          },
          400: errorResponse("invalid tag value"),
        },
      }),
    ),
    async (c) => {
      const { tags } = c.req.valid("query");
      const { body } = await readThrough(deps.readCache, { read: "findCheeses", payload: { tags } }, () =>
        passService(deps, c, catalogueRpc.findCheeses, { tags }),
      );
      const successor = `${deps.publicUrl}/v2/cheeses?${new URLSearchParams({ tags: tags.join(",") })}`;
      return answerPassed(c, body, 200, {
        Deprecation: "true",
        Link: `<${successor}>; rel="successor-version"`,
      });
    },
  );
}

export function cheeseSearchRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  listCheeses(api, deps);
  findByStatus(api, deps);
  findByTags(api, deps);
}
