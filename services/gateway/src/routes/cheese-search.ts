import { readThrough } from "@cheese/catalogue/read-cache";
import * as contracts from "@cheese/contracts";
import { z } from "@hono/zod-openapi";
import { answerPassed, passService } from "../rpc.ts";
import { cheeseRoute } from "./cheese-access.ts";
import { pageHeaders } from "./pages.ts";
import { errorResponse, json } from "./responses.ts";
import type { Route } from "./route.ts";

const cheeseArray = { "application/json": { schema: z.array(contracts.Cheese) } };

const listCheeses = cheeseRoute(
  {
    method: "get",
    path: "/cheeses",
    operationId: "listCheeses",
    access: { apiKey: true, oauth: ["read:cheeses"] },
    request: { query: contracts.CheeseListQuery },
    responses: {
      200: {
        description: "a page of cheeses",
        headers: {
          "X-Total-Count": { description: "= total", schema: { type: "integer" } },
          Link: {
            description: 'RFC 8288; rel="next" when there is a next page',
            schema: { type: "string" },
          },
        },
        content: json(contracts.CheeseList),
      },
    },
  },
  (deps) => async (c) => {
    const payload = contracts.toCheeseListRequest(c.req.valid("query"));
    const { meta, body } = await readThrough(deps.readCache, { read: "listCheeses", payload }, () =>
      passService(deps, c, contracts.catalogueRpc.listCheeses, payload),
    );
    return answerPassed(c, body, 200, pageHeaders(deps, c, meta));
  },
);

const findByStatus = cheeseRoute(
  {
    method: "get",
    path: "/cheeses/findByStatus",
    operationId: "findCheesesByStatus",
    access: { oauth: ["read:cheeses"] },
    request: { query: contracts.FindByStatusQuery },
    responses: {
      200: { description: "cheeses with any of the statuses", content: cheeseArray },
      400: errorResponse("invalid status value"),
    },
  },
  (deps) => async (c) => {
    const { status } = c.req.valid("query");
    const { body } = await readThrough(deps.readCache, { read: "findCheeses", payload: { status } }, () =>
      passService(deps, c, contracts.catalogueRpc.findCheeses, { status }),
    );
    return answerPassed(c, body, 200);
  },
);

const findByTags = cheeseRoute(
  {
    method: "get",
    path: "/cheeses/findByTags",
    operationId: "findCheesesByTags",
    deprecated: true,
    access: { oauth: ["read:cheeses"] },
    request: { query: contracts.FindByTagsQuery },
    responses: {
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
  },
  (deps) => async (c) => {
    const { tags } = c.req.valid("query");
    const { body } = await readThrough(deps.readCache, { read: "findCheeses", payload: { tags } }, () =>
      passService(deps, c, contracts.catalogueRpc.findCheeses, { tags }),
    );
    const successor = `${deps.publicUrl}/v2/cheeses?${new URLSearchParams({ tags: tags.join(",") })}`;
    return answerPassed(c, body, 200, {
      Deprecation: "true",
      Link: `<${successor}>; rel="successor-version"`,
    });
  },
);

export const cheeseSearchRoutes: Route[] = [listCheeses, findByStatus, findByTags];
