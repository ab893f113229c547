import { readThrough } from "@cheese/catalogue/read-cache";
import * as contracts from "@cheese/contracts";
import {
  answerPassed,
  callService,
  forward,
  idempotency,
  idempotencyOf,
  passService,
  replayedHeader,
} from "../rpc.ts";
import { cheeseRoute, readWithApiKey, writeCheeses } from "./cheese-access.ts";
import { cheeseSearchRoutes } from "./cheese-search.ts";
import { imageRoutes } from "./images.ts";
import { emptyBodyIsNoBody, etagOf, notModified, parseIfMatch } from "./preconditions.ts";
import { errorResponse, json, jsonBody, validationErrorResponse } from "./responses.ts";
import type { Route } from "./route.ts";

const cheeseResponse = (description: string) => ({
  description,
  headers: contracts.etagHeader,
  content: json(contracts.Cheese),
});

const addCheese = cheeseRoute(
  {
    method: "post",
    path: "/cheeses",
    operationId: "addCheese",
    access: writeCheeses,
    use: [idempotency],
    request: { headers: contracts.IdempotencyKeyHeaders, body: jsonBody(contracts.CheeseInput) },
    responses: {
      201: {
        ...cheeseResponse("the cheese"),
        headers: {
          ...contracts.etagHeader,
          Location: { description: "URL of the new cheese", schema: { type: "string" } },
        },
      },
      409: errorResponse("name already exists in the category, or Idempotency-Key reused"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    // The catalogue keeps the key's record: a repeat is answered as the first request was. Its
    // cheese is answered as the catalogue encoded it, the headers from the reply's meta.
    const { meta, body } = await passService(deps, c, contracts.catalogueRpc.createCheese, {
      fields: contracts.toCheeseFields(c.req.valid("json")),
      ...idempotencyOf(c),
    });
    return answerPassed(c, body, 201, {
      Location: `${deps.publicUrl}/v2/cheeses/${meta.id}`,
      ETag: etagOf(meta.revision),
      ...replayedHeader(meta),
    });
  },
);

/** What PUT /cheeses and POST /cheeses/{cheeseId} answer: both change an existing cheese. */
const changeResponses = {
  200: cheeseResponse("the cheese"),
  404: errorResponse("cheese not found"),
  409: errorResponse("name already exists in the category"),
  412: errorResponse("the cheese changed since the ETag in If-Match"),
  422: validationErrorResponse,
};

const replaceCheese = cheeseRoute(
  {
    method: "put",
    path: "/cheeses",
    operationId: "updateCheese",
    access: writeCheeses,
    request: { headers: contracts.IfMatchHeaders, body: jsonBody(contracts.CheeseReplacement) },
    responses: changeResponses,
  },
  (deps) => async (c) => {
    const input = c.req.valid("json");
    const { cheese, revision } = await callService(deps, c, contracts.catalogueRpc.replaceCheese, {
      cheeseId: input.id,
      fields: contracts.toCheeseFields(input),
      ifMatch: parseIfMatch(c.req.valid("header")["If-Match"]),
    });
    c.header("ETag", etagOf(revision));
    return c.json(cheese, 200);
  },
);

const getCheese = cheeseRoute(
  (deps) => ({
    method: "get",
    path: "/cheeses/{cheeseId}",
    operationId: "getCheeseById",
    access: readWithApiKey,
    request: { params: contracts.CheeseIdParam, query: contracts.asOfQuery(deps.clock) },
    responses: {
      200: { ...cheeseResponse("the cheese"), headers: { ...contracts.etagHeader, ...contracts.asOfHeader } },
      304: { description: "If-None-Match named the ETag of the cheese that would be answered" },
      404: errorResponse("cheese not found (with asOf: not there at that moment)"),
    },
  }),
  (deps) => async (c) => {
    const { cheeseId } = c.req.valid("param");
    const { asOf } = c.req.valid("query");
    if (asOf !== undefined) {
      // Never through the read cache: it holds the cheese as it is now.
      const { cheese, revision, at } = await callService(deps, c, contracts.catalogueRpc.getCheeseAsOf, {
        cheeseId,
        asOf,
      });
      const etag = etagOf(revision);
      if (notModified(c.req.header("if-none-match"), etag)) {
        return c.body(null, 304, { ETag: etag, "X-Cheese-As-Of": at });
      }
      return c.json(cheese, 200, { ETag: etag, "X-Cheese-As-Of": at });
    }
    // A hit is the reply itself, not a promise: no turn waited.
    const read = readThrough(deps.readCache, { read: "getCheese", cheeseId }, () =>
      passService(deps, c, contracts.catalogueRpc.getCheese, { cheeseId }),
    );
    const { meta, body } = read instanceof Promise ? await read : read;
    const etag = etagOf(meta.revision);
    if (notModified(c.req.header("if-none-match"), etag)) return c.body(null, 304, { ETag: etag });
    return answerPassed(c, body, 200, { ETag: etag });
  },
);

const updateCheese = cheeseRoute(
  {
    method: "post",
    path: "/cheeses/{cheeseId}",
    operationId: "updateCheeseWithForm",
    access: writeCheeses,
    use: [emptyBodyIsNoBody],
    request: {
      params: contracts.CheeseIdParam,
      query: contracts.CheeseUpdateQuery,
      headers: contracts.IfMatchHeaders,
      body: { required: false, content: json(contracts.CheesePatch) },
    },
    responses: changeResponses,
  },
  (deps) => async (c) => {
    const { cheese, revision } = await callService(deps, c, contracts.catalogueRpc.updateCheese, {
      cheeseId: c.req.valid("param").cheeseId,
      changes: contracts.toCheeseChanges(c.req.valid("json"), c.req.valid("query")),
      ifMatch: parseIfMatch(c.req.valid("header")["If-Match"]),
    });
    c.header("ETag", etagOf(revision));
    return c.json(cheese, 200);
  },
);

const deleteCheese = cheeseRoute(
  {
    method: "delete",
    path: "/cheeses/{cheeseId}",
    operationId: "deleteCheese",
    access: writeCheeses,
    request: { params: contracts.CheeseIdParam, headers: contracts.CheeseDeleteHeaders },
    responses: {
      204: { description: "deleted" },
      404: errorResponse("cheese not found"),
      409: errorResponse("cheese has active orders and cannot be deleted"),
    },
  },
  forward(contracts.catalogueRpc.deleteCheese, 204, (c) => ({ ...c.req.valid("param"), confirmed: true })),
);

export const cheeseRoutes: Route[] = [
  addCheese,
  replaceCheese,
  // Fixed paths under /cheeses/ first: Hono tries routes in the order they are added.
  ...cheeseSearchRoutes,
  ...imageRoutes,
  getCheese,
  updateCheese,
  deleteCheese,
];
