import type { Delivery, DeliveryStatus, Webhook } from "@cheese/contracts";
import type { Filter } from "@cheese/read-models";
import { DomainError } from "@cheese/service-kit";
import { DELIVERIES, type DeliveryDocument } from "../projections/deliveries.ts";
import { WEBHOOKS, type WebhookDocument } from "../projections/webhooks.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import type { NotificationSide } from "./side.ts";

interface Page {
  cursor?: string | undefined;
  limit: number;
}

export async function getWebhook(side: NotificationSide, webhookId: number): Promise<Webhook> {
  await side.projection.catchUp();
  const document = await side.readModels
    .collection<WebhookDocument>(WEBHOOKS)
    .findOne({ _id: webhookId, deleted: false });
  if (!document) throw new DomainError(404, "not_found", `webhook ${webhookId} not found`);
  return document.webhook;
}

/** Registrations in id order (oldest first); the secret is never part of them. */
export async function listWebhooks(side: NotificationSide, page: Page) {
  await side.projection.catchUp();
  const filter: Filter = { deleted: false };
  if (page.cursor) {
    const after = decodeCursor(
      page.cursor,
      (v): v is { after: number } => typeof (v as { after?: unknown })?.after === "number",
    );
    filter._id = { $gt: after.after };
  }
  const found = await side.readModels
    .collection<WebhookDocument>(WEBHOOKS)
    .find(filter, { sort: { _id: 1 }, limit: page.limit + 1 });
  const items = found.slice(0, page.limit).map((document) => document.webhook);
  const hasMore = found.length > page.limit;
  const last = items[items.length - 1];
  return { items, hasMore, nextCursor: hasMore && last ? encodeCursor({ after: last.id }) : null };
}

type DeliveryKey = { createdAt: string; id: number };
const isDeliveryKey = (v: unknown): v is DeliveryKey =>
  typeof (v as DeliveryKey)?.createdAt === "string" && typeof (v as DeliveryKey)?.id === "number";

/** A registration's deliveries, newest first, each with every attempt. */
export async function listDeliveries(
  side: NotificationSide,
  request: Page & { webhookId: number; status?: DeliveryStatus[] | undefined },
) {
  await getWebhook(side, request.webhookId);
  const filter: Filter = { webhookId: request.webhookId };
  if (request.status?.length) filter.status = { $in: request.status };
  if (request.cursor) {
    const key = decodeCursor(request.cursor, isDeliveryKey);
    filter.$or = [{ createdAt: { $lt: key.createdAt } }, { createdAt: key.createdAt, _id: { $lt: key.id } }];
  }
  const found = await side.readModels
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

function toDelivery(document: DeliveryDocument): Delivery {
  const attempts = Object.values(document.attempts).sort(
    (a, b) => a.round - b.round || a.attempt - b.attempt,
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
