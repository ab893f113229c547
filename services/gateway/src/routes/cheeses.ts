import { Cheese, CheeseIdParam, CheeseInput, catalogueRpc, toCheeseFields } from "@cheese/contracts";
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { secured } from "../auth/access.ts";
import type { GatewayDeps, GatewayEnv } from "../env.ts";
import { callService } from "../rpc.ts";
import { commonResponses, errorResponse, validationErrorResponse } from "./responses.ts";

const cheeseJson = { "application/json": { schema: Cheese } };

const addCheese = (deps: GatewayDeps) =>
  secured(
    { oauth: ["write:cheeses"] },
    deps.authorize,
    createRoute({
      method: "post",
      path: "/cheeses",
      operationId: "addCheese",
      tags: ["Cheeses"],
      summary: "Add a cheese",
      request: { body: { required: true, content: { "application/json": { schema: CheeseInput } } } },
      responses: {
        ...commonResponses,
        201: { description: "the cheese", content: cheeseJson },
        409: errorResponse("name already exists in the category"),
        422: validationErrorResponse,
      },
    }),
  );

const getCheese = (deps: GatewayDeps) =>
  secured(
    { apiKey: true, bearer: true, oauth: ["read:cheeses"] },
    deps.authorize,
    createRoute({
      method: "get",
      path: "/cheeses/{cheeseId}",
      operationId: "getCheeseById",
      tags: ["Cheeses"],
      summary: "Find a cheese by id",
      request: { params: CheeseIdParam },
      responses: {
        ...commonResponses,
        200: { description: "the cheese", content: cheeseJson },
        404: errorResponse("cheese not found"),
      },
    }),
  );

export function cheeseRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(addCheese(deps), async (c) => {
    const input = c.req.valid("json");
    const { cheese, revision } = await callService(deps, c, catalogueRpc.createCheese, {
      fields: toCheeseFields(input),
    });
    c.header("Location", `/v2/cheeses/${cheese.id}`);
    c.header("ETag", `"${revision}"`);
    return c.json(cheese, 201);
  });

  api.openapi(getCheese(deps), async (c) => {
    const { cheeseId } = c.req.valid("param");
    const { cheese, revision } = await callService(deps, c, catalogueRpc.getCheese, { cheeseId });
    c.header("ETag", `"${revision}"`);
    return c.json(cheese, 200);
  });
}
