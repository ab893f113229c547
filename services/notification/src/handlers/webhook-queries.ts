import type { Delivery, DeliveryDetail, DeliveryStatus, Webhook, WebhookEventKind } from "@cheese/contracts";
import type { Filter } from "@cheese/read-models";
import { decodeCursor, encodeCursor, notFound } from "@cheese/service-kit";
import { z } from "zod";
import { DELIVERIES, type DeliveryDocument } from "../projections/deliveries.ts";
import { WEBHOOKS, type WebhookDocument, webhookAt } from "../projections/webhooks.ts";
import { deliveryHistory } from "./delivery-history.ts";
import type { NotificationDeps } from "./deps.ts";

interface Page {
  cursor?: string | undefined;
  limit: number;
}

export async function getWebhook(deps: NotificationDeps, webhookId: number): Promise<Webhook> {
  await deps.webhooks.catchUp();
  const document = await deps.readModels
    .collection<WebhookDocument>(WEBHOOKS)
    .findOne({ _id: webhookId, deleted: false });
  if (!document) throw notFound(`webhook ${webhookId} not found`);
  return webhookAt(document, deps.clock.now().getTime());
}

/** Registrations in id order (oldest first); the secret is never part of them. */
export async function listWebhooks(deps: NotificationDeps, page: Page) {
  await deps.webhooks.catchUp();
  const filter: Filter = { deleted: false };
  if (page.cursor) {
    filter._id = { $gt: decodeCursor(page.cursor, WebhookPosition).after };
  }
  const found = await deps.readModels
    .collection<WebhookDocument>(WEBHOOKS)
    .find(filter, { sort: { _id: 1 }, limit: page.limit + 1 });
  const now = deps.clock.now().getTime();
  const items = found.slice(0, page.limit).map((document) => webhookAt(document, now));
  const hasMore = found.length > page.limit;
  const last = items[items.length - 1];
  return { items, hasMore, nextCursor: hasMore && last ? encodeCursor({ after: last.id }) : null };
}

/** Cursor positions: the last registration's id; the last delivery's time and id. */
const WebhookPosition = z.object({ after: z.number().int() });
const DeliveryPosition = z.object({ createdAt: z.string(), id: z.number().int() });

/** A registration's deliveries, newest first, each with every attempt (its outcome, not its bytes). */
export async function listDeliveries(
  deps: NotificationDeps,
  request: Page & {
    webhookId: number;
    status?: DeliveryStatus[] | undefined;
    type?: WebhookEventKind[] | undefined;
  },
) {
  await getWebhook(deps, request.webhookId);
  await deliveryHistory(deps);
  const filter: Filter = { webhookId: request.webhookId };
  if (request.status?.length) filter.status = { $in: request.status };
  if (request.type?.length) filter.eventType = { $in: request.type };
  if (request.cursor) {
    const key = decodeCursor(request.cursor, DeliveryPosition);
    filter.$or = [{ createdAt: { $lt: key.createdAt } }, { createdAt: key.createdAt, _id: { $lt: key.id } }];
  }
  const found = await deps.readModels
    .collection<DeliveryDocument>(DELIVERIES)
    .find(filter, { sort: { createdAt: -1, _id: -1 }, limit: request.limit + 1 });
  const items = found.slice(0, request.limit).map(toDelivery);
  const hasMore = found.length > request.limit;
  const last = items[items.length - 1];
  return {
    items,
    hasMore,
    nextCursor: hasMore && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null,
  };
}

/** One delivery of the registration, with the body it sends and each attempt's request and answer. */
export async function getDelivery(
  deps: NotificationDeps,
  request: { webhookId: number; deliveryId: number },
): Promise<DeliveryDetail> {
  await getWebhook(deps, request.webhookId);
  await deliveryHistory(deps);
  const document = await deps.readModels
    .collection<DeliveryDocument>(DELIVERIES)
    .findOne({ _id: request.deliveryId, webhookId: request.webhookId });
  if (!document) throw notFound(`delivery ${request.deliveryId} of webhook ${request.webhookId} not found`);
  return {
    ...toDelivery(document),
    body: document.body,
    attempts: attemptsOf(document).map((attempt) => ({
      ...attempt,
      request: attempt.request ?? null,
      response: attempt.response ?? null,
    })),
  };
}

const attemptsOf = (document: DeliveryDocument) =>
  Object.values(document.attempts).sort((a, b) => a.round - b.round || a.attempt - b.attempt);

function toDelivery(document: DeliveryDocument): Delivery {
  const attempts = attemptsOf(document).map(
    ({ request: _request, response: _response, ...attempt }) => attempt,
  );
  return {
    id: document._id,
    webhookId: document.webhookId,
    eventId: document.eventId,
    eventType: document.eventType,
    status: document.status,
    deadLettered: document.deadLettered,
    attempts,
    nextAttemptAt: document.nextAttemptAt,
    createdAt: document.createdAt,
    updatedAt: document.updatedAt,
  };
}
