import * as contracts from "@cheese/contracts";
import { noStore } from "../middleware/no-store.ts";
import { forward } from "../rpc.ts";
import { operatorKey, operatorOnly, operatorResponses } from "./operator.ts";
import { errorResponse, jsonResponse } from "./responses.ts";
import { type Route, routes } from "./route.ts";

/**
 * Integration events a service's consumer kept failing (docs/operations.md "Dead letters"):
 * operators list, replay and delete them; the notification service answers for the bus.
 */
const route = routes({
  tags: ["Dead letters"],
  access: operatorKey,
  use: [operatorOnly("only operator API keys may manage dead letters")],
  responses: operatorResponses,
});
const notFound = { 404: errorResponse("dead letter not found") };

const listDeadLetters = route(
  {
    method: "get",
    path: "/dead-letters",
    operationId: "listDeadLetters",
    use: [noStore],
    request: { query: contracts.DeadLetterListQuery },
    responses: { 200: jsonResponse("a page of dead letters", contracts.DeadLetterList) },
  },
  forward(contracts.notificationRpc.listDeadLetters, 200, (c) => c.req.valid("query")),
);

const replayDeadLetter = route(
  {
    method: "post",
    path: "/dead-letters/{id}/replay",
    operationId: "replayDeadLetter",
    request: { params: contracts.DeadLetterIdParam },
    responses: {
      ...notFound,
      202: jsonResponse("the event is on its way to its consumer", contracts.DeadLetterReplayed),
    },
  },
  forward(contracts.notificationRpc.replayDeadLetter, 202, (c) => c.req.valid("param")),
);

const deleteDeadLetter = route(
  {
    method: "delete",
    path: "/dead-letters/{id}",
    operationId: "deleteDeadLetter",
    request: { params: contracts.DeadLetterIdParam },
    responses: { ...notFound, 204: { description: "discarded" } },
  },
  forward(contracts.notificationRpc.deleteDeadLetter, 204, (c) => c.req.valid("param")),
);

export const deadLettersRoutes: Route[] = [listDeadLetters, replayDeadLetter, deleteDeadLetter];
