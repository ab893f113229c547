import {
  DeadLetterIdParam,
  DeadLetterList,
  DeadLetterListQuery,
  DeadLetterReplayed,
  notificationRpc,
} from "@cheese/contracts";
import { callService } from "../rpc.ts";
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
    summary: "Integration events a service kept failing to handle, oldest first",
    description:
      "Each with the consumer that failed it, the event as published (subject, headers, payload), the last " +
      "error and how many deliveries were made. An event lands here once its consumer has failed it for " +
      "DEAD_LETTER_AFTER (24 h by default), retried meanwhile with a backoff of up to 5 minutes.",
    request: { query: DeadLetterListQuery },
    responses: { 200: jsonResponse("a page of dead letters", DeadLetterList) },
  },
  (deps) => async (c) => {
    c.header("Cache-Control", "no-store");
    return c.json(await callService(deps, c, notificationRpc.listDeadLetters, c.req.valid("query")), 200);
  },
);

const replayDeadLetter = route(
  {
    method: "post",
    path: "/dead-letters/{id}/replay",
    operationId: "replayDeadLetter",
    summary: "Hand a dead letter back to the consumer that failed it",
    description:
      "The event goes to that consumer only (as a first delivery; consumers are idempotent by event id), " +
      "and leaves the list. Should it fail again, it is retried and, after DEAD_LETTER_AFTER, dead-lettered again.",
    request: { params: DeadLetterIdParam },
    responses: {
      ...notFound,
      202: jsonResponse("the event is on its way to its consumer", DeadLetterReplayed),
    },
  },
  (deps) => async (c) =>
    c.json(await callService(deps, c, notificationRpc.replayDeadLetter, c.req.valid("param")), 202),
);

const deleteDeadLetter = route(
  {
    method: "delete",
    path: "/dead-letters/{id}",
    operationId: "deleteDeadLetter",
    summary: "Discard a dead letter for good",
    description: "The event is not handled by its consumer, now or later. Other consumers are not affected.",
    request: { params: DeadLetterIdParam },
    responses: { ...notFound, 204: { description: "discarded" } },
  },
  (deps) => async (c) => {
    await callService(deps, c, notificationRpc.deleteDeadLetter, c.req.valid("param"));
    return c.body(null, 204);
  },
);

export const deadLettersRoutes: Route[] = [listDeadLetters, replayDeadLetter, deleteDeadLetter];
