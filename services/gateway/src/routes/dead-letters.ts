import {
  DeadLetterIdParam,
  DeadLetterList,
  DeadLetterListQuery,
  DeadLetterReplayed,
  notificationRpc,
} from "@cheese/contracts";
import { createRoute, type OpenAPIHono, type RouteConfig, type z } from "@hono/zod-openapi";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "../env.ts";
import { callService } from "../rpc.ts";
import { operatorResponses, operatorRoute } from "./operator.ts";
import { errorResponse } from "./responses.ts";

/**
 * Integration events a service's consumer kept failing (docs/operations.md "Dead letters"):
 * operators list, replay and delete them; the notification service answers for the bus.
 */
const deadLetterRoute = <R extends RouteConfig>(deps: GatewayDeps, route: R): R =>
  operatorRoute(deps, route, "only operator API keys may manage dead letters");

const notFound = { 404: errorResponse("dead letter not found") };
const json = <S extends z.ZodType>(schema: S) => ({ "application/json": { schema } });

function listDeadLetters(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    deadLetterRoute(
      deps,
      createRoute({
        method: "get",
        path: "/dead-letters",
        operationId: "listDeadLetters",
        tags: ["Dead letters"],
        summary: "Integration events a service kept failing to handle, oldest first",
        description:
          "Each with the consumer that failed it, the event as published (subject, headers, payload), the last " +
          "error and how many deliveries were made. An event lands here once its consumer has failed it for " +
          "DEAD_LETTER_AFTER (24 h by default), retried meanwhile with a backoff of up to 5 minutes.",
        request: { query: DeadLetterListQuery },
        responses: {
          ...operatorResponses,
          200: { description: "a page of dead letters", content: json(DeadLetterList) },
        },
      }),
    ),
    async (c) => {
      const { cursor, limit, consumer } = c.req.valid("query");
      c.header("Cache-Control", "no-store");
      return c.json(
        await callService(deps, c, notificationRpc.listDeadLetters, { cursor, limit, consumer }),
        200,
      );
    },
  );
}

function replayDeadLetter(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    deadLetterRoute(
      deps,
      createRoute({
        method: "post",
        path: "/dead-letters/{id}/replay",
        operationId: "replayDeadLetter",
        tags: ["Dead letters"],
        summary: "Hand a dead letter back to the consumer that failed it",
        description:
          "The event goes to that consumer only (as a first delivery; consumers are idempotent by event id), " +
          "and leaves the list. Should it fail again, it is retried and, after DEAD_LETTER_AFTER, dead-lettered again.",
        request: { params: DeadLetterIdParam },
        responses: {
          ...operatorResponses,
          ...notFound,
          202: { description: "the event is on its way to its consumer", content: json(DeadLetterReplayed) },
        },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await callService(deps, c, notificationRpc.replayDeadLetter, { id }), 202);
    },
  );
}

function deleteDeadLetter(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  api.openapi(
    deadLetterRoute(
      deps,
      createRoute({
        method: "delete",
        path: "/dead-letters/{id}",
        operationId: "deleteDeadLetter",
        tags: ["Dead letters"],
        summary: "Discard a dead letter for good",
        description:
          "The event is not handled by its consumer, now or later. Other consumers are not affected.",
        request: { params: DeadLetterIdParam },
        responses: { ...operatorResponses, ...notFound, 204: { description: "discarded" } },
      }),
    ),
    async (c) => {
      const { id } = c.req.valid("param");
      await callService(deps, c, notificationRpc.deleteDeadLetter, { id });
      return c.body(null, 204);
    },
  );
}

export function deadLettersRoutes(api: OpenAPIHono<GatewayEnv>, deps: GatewayDeps): void {
  listDeadLetters(api, deps);
  replayDeadLetter(api, deps);
  deleteDeadLetter(api, deps);
}
