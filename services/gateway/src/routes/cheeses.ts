import {
  Cheese,
  CheeseIdParam,
  CheeseInput,
  CheeseName,
  CheesePatch,
  CheeseReplacement,
  CheeseStatus,
  catalogueRpc,
  toCheeseChanges,
  toCheeseFields,
} from "@cheese/contracts";
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { secured } from "../auth/access.ts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { readThrough } from "../read-cache.ts";
import { answerPassed, callService, idempotency, idempotencyOf, markReplayed, passService } from "../rpc.ts";
import { asOfHeader, asOfQuery } from "./as-of.ts";
import { authResponses, readWithApiKey, writeCheeses } from "./cheese-access.ts";
import { cheeseSearchRoutes } from "./cheese-search.ts";
import { imageRoutes } from "./images.ts";
import {
  emptyBodyIsNoBody,
  etagHeader,
  etagOf,
  ifMatchHeader,
  notModified,
  parseIfMatch,
} from "./preconditions.ts";
import { commonResponses, errorResponse, validationErrorResponse } from "./responses.ts";

const cheeseResponse = (description: string) => ({
  description,
  headers: etagHeader,
  content: { "application/json": { schema: Cheese } },
});

function addCheese(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      writeCheeses,
      deps.authorize,
      createRoute({
        method: "post",
        path: "/cheeses",
        operationId: "addCheese",
        tags: ["Cheeses"],
        summary: "Add a cheese",
        description: "The name must be unique within its category.",
        request: {
          headers: z.object({
            "Idempotency-Key": z
              .string()
              .optional()
              .openapi({
                param: { in: "header" },
                description: "a repeat within 24 h returns the first response and adds nothing",
              }),
          }),
          body: { required: true, content: { "application/json": { schema: CheeseInput } } },
        },
        responses: {
          ...commonResponses,
          ...authResponses,
          201: {
            ...cheeseResponse("the cheese"),
            headers: {
              ...etagHeader,
              Location: { description: "URL of the new cheese", schema: { type: "string" } },
            },
          },
          409: errorResponse("name already exists in the category, or Idempotency-Key reused"),
          422: validationErrorResponse,
        },
      }),
      idempotency(),
    ),
    async (c) => {
      const input = c.req.valid("json");
      // The catalogue keeps the key's record: a repeat is answered as the first request was.
      const reply = await callService(deps, c, catalogueRpc.createCheese, {
        fields: toCheeseFields(input),
        ...idempotencyOf(c),
      });
      const { cheese, revision } = reply;
      markReplayed(c, reply);
      c.header("Location", `${deps.publicUrl}/v2/cheeses/${cheese.id}`);
      c.header("ETag", etagOf(revision));
      return c.json(cheese, 201);
    },
  );
}

/** What PUT /cheeses and POST /cheeses/{cheeseId} answer: both change an existing cheese. */
const changeResponses = {
  ...commonResponses,
  ...authResponses,
  200: cheeseResponse("the cheese"),
  404: errorResponse("cheese not found"),
  409: errorResponse("name already exists in the category"),
  412: errorResponse("the cheese changed since the ETag in If-Match"),
  422: validationErrorResponse,
};

function replaceCheese(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      writeCheeses,
      deps.authorize,
      createRoute({
        method: "put",
        path: "/cheeses",
        operationId: "updateCheese",
        tags: ["Cheeses"],
        summary: "Replace a cheese",
        description: "The id must match an existing cheese; omitted optional fields are reset.",
        request: {
          headers: ifMatchHeader,
          body: { required: true, content: { "application/json": { schema: CheeseReplacement } } },
        },
        responses: changeResponses,
      }),
    ),
    async (c) => {
      const input = c.req.valid("json");
      const ifMatch = parseIfMatch(c.req.valid("header")["If-Match"]);
      const { cheese, revision } = await callService(deps, c, catalogueRpc.replaceCheese, {
        cheeseId: input.id,
        fields: toCheeseFields(input),
        ...(ifMatch !== undefined ? { ifMatch } : {}),
      });
      c.header("ETag", etagOf(revision));
      return c.json(cheese, 200);
    },
  );
}

function getCheese(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      readWithApiKey,
      deps.authorize,
      createRoute({
        method: "get",
        path: "/cheeses/{cheeseId}",
        operationId: "getCheeseById",
        tags: ["Cheeses"],
        summary: "Find a cheese by id",
        description:
          "The cheese with its ETag (its revision): send it back in If-None-Match to get 304 when unchanged, or in If-Match on a write to refuse it when someone changed the cheese meanwhile. " +
          "With asOf, the cheese as it was at that moment (its events up to then), with the ETag of the revision it was at and X-Cheese-As-Of, when the last of those events was recorded; 404 when it did not exist yet or was already deleted.",
        request: { params: CheeseIdParam, query: asOfQuery(deps.clock) },
        responses: {
          ...commonResponses,
          ...authResponses,
          200: { ...cheeseResponse("the cheese"), headers: { ...etagHeader, ...asOfHeader } },
          304: { description: "If-None-Match named the ETag of the cheese that would be answered" },
          404: errorResponse("cheese not found (with asOf: not there at that moment)"),
        },
      }),
    ),
    async (c) => {
      const { cheeseId } = c.req.valid("param");
      const { asOf } = c.req.valid("query");
      if (asOf !== undefined) {
        // Never through the read cache: it holds the cheese as it is now.
        const { cheese, revision, at } = await callService(deps, c, catalogueRpc.getCheeseAsOf, {
          cheeseId,
          asOf,
        });
        const etag = etagOf(revision);
        if (notModified(c.req.header("if-none-match"), etag)) {
          return c.body(null, 304, { ETag: etag, "X-Cheese-As-Of": at });
        }
        return c.json(cheese, 200, { ETag: etag, "X-Cheese-As-Of": at });
      }
      // The call is passed inline, not bound to a name (docs/architecture.md, "Closures on hot paths").
      const { meta, body } = await readThrough(deps.readCache, { read: "getCheese", cheeseId }, () =>
        passService(deps, c, catalogueRpc.getCheese, { cheeseId }),
      );
      const etag = etagOf(meta.revision);
      if (notModified(c.req.header("if-none-match"), etag)) return c.body(null, 304, { ETag: etag });
      return answerPassed(c, body, 200, { ETag: etag });
    },
  );
}

function updateCheese(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      writeCheeses,
      deps.authorize,
      createRoute({
        method: "post",
        path: "/cheeses/{cheeseId}",
        operationId: "updateCheeseWithForm",
        tags: ["Cheeses"],
        summary: "Update a cheese partially",
        description:
          "Only provided fields are updated: name and status as query parameters, and any CheeseInput " +
          "field in an optional JSON body, merged (the query parameters win).",
        request: {
          params: CheeseIdParam,
          query: z.object({
            name: CheeseName.optional().openapi({ description: "new name" }),
            status: CheeseStatus.optional().openapi({ description: "new status: available, pending, sold" }),
          }),
          headers: ifMatchHeader,
          body: { required: false, content: { "application/json": { schema: CheesePatch } } },
        },
        responses: changeResponses,
      }),
      emptyBodyIsNoBody,
    ),
    async (c) => {
      const { cheeseId } = c.req.valid("param");
      const ifMatch = parseIfMatch(c.req.valid("header")["If-Match"]);
      const { cheese, revision } = await callService(deps, c, catalogueRpc.updateCheese, {
        cheeseId,
        changes: toCheeseChanges(c.req.valid("json"), c.req.valid("query")),
        ...(ifMatch !== undefined ? { ifMatch } : {}),
      });
      c.header("ETag", etagOf(revision));
      return c.json(cheese, 200);
    },
  );
}

function deleteCheese(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    secured(
      writeCheeses,
      deps.authorize,
      createRoute({
        method: "delete",
        path: "/cheeses/{cheeseId}",
        operationId: "deleteCheese",
        tags: ["Cheeses"],
        summary: "Delete a cheese",
        description:
          "Permanent removal, cannot be undone. Placed orders for the cheese are cancelled; approved " +
          "or shipped ones make it 409.",
        request: {
          params: CheeseIdParam,
          headers: z.object({
            "X-Confirm-Delete": z
              .string()
              .refine((value) => value.trim().toLowerCase() === "true", { message: "must be true" })
              .openapi({
                param: { in: "header", required: true },
                type: "boolean",
                description: "must be true",
              }),
          }),
        },
        responses: {
          ...commonResponses,
          ...authResponses,
          204: { description: "deleted" },
          404: errorResponse("cheese not found"),
          409: errorResponse("cheese has active orders and cannot be deleted"),
        },
      }),
    ),
    async (c) => {
      const { cheeseId } = c.req.valid("param");
      await callService(deps, c, catalogueRpc.deleteCheese, { cheeseId, confirmed: true });
      return c.body(null, 204);
    },
  );
}

export function cheeseRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  addCheese(api, deps);
  replaceCheese(api, deps);

  // Fixed paths under /cheeses/ first: Hono tries routes in the order they are added.
  cheeseSearchRoutes(api, deps);
  imageRoutes(api, deps);
  getCheese(api, deps);
  updateCheese(api, deps);
  deleteCheese(api, deps);
}
