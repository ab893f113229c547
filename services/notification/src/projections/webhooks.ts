import type { Webhook, WebhookEventKind } from "@cheese/contracts";
import type { EventStore, RecordedEvent } from "@cheese/event-store";
import type { CollectionDefinition, Document, ReadModelStore } from "@cheese/read-models";
import { type Logger, type Projection, startProjection } from "@cheese/service-kit";
import type { WebhookEvent } from "../domain/webhook.ts";
import { maskedAuth } from "../security/receiver-auth.ts";

/** The `webhooks` read model: one document per registration, `_id` = webhook id. No secret. */
export interface WebhookDocument extends Document {
  _id: number;
  webhook: Webhook;
  /** Kinds wanted, top-level so `{ events: kind }` finds the subscribers. */
  events: WebhookEventKind[];
  deleted: boolean;
}

export const WEBHOOKS = "webhooks";

/** Raise when projectWebhook writes something else: the read model is rebuilt (architecture.md). */
export const WEBHOOKS_VERSION = 5;

/** The `webhooks` collection's indexes and every query run on it (handlers/). */
export const webhooksCollection: CollectionDefinition = {
  name: WEBHOOKS,
  indexes: [{ keys: { events: 1, _id: 1 } }],
  queries: [
    { name: "one registration", filter: { _id: 1, deleted: false } },
    {
      name: "GET /webhooks, a page in id order",
      filter: { deleted: false, _id: { $gt: 1 } },
      optional: ["_id"],
      sort: { _id: 1 },
    },
    {
      name: "start: the registrations ever recorded wanting one of the kinds (deleted ones too)",
      filter: { events: { $in: ["order.created", "cheese.new_arrival"] } },
    },
    {
      name: "fan-out: the registrations wanting a kind",
      filter: { deleted: false, events: "order.created" },
      sort: { _id: 1 },
    },
  ],
};

/**
 * Starts the `webhooks` projection, as the service runs it and its tests start it, with `changes`:
 * how many webhook events it has applied in this process, counted before and after each (so a
 * lookup overlapping a change is not kept); `NotificationDeps.webhookChanges`.
 */
export async function startWebhooksProjection(options: {
  eventStore: EventStore;
  readModels: ReadModelStore;
  logger: Logger;
  /** Told the kinds of each registration recorded or changed, on whichever replica. */
  onKinds?: (kinds: WebhookEventKind[]) => void;
}): Promise<{ projection: Projection; changes: () => number }> {
  let changes = 0;
  const { onKinds, ...rest } = options;
  const projection = await startProjection({
    name: "webhooks",
    version: WEBHOOKS_VERSION,
    collections: [webhooksCollection],
    ...rest,
    categories: ["webhook"],
    apply: async (event, models) => {
      changes++;
      await projectWebhook(event, models);
      changes++;
      const domainEvent = { type: event.type, data: event.data } as WebhookEvent;
      if (domainEvent.type === "WebhookRegistered") onKinds?.(domainEvent.data.events);
      if (domainEvent.type === "WebhookUpdated" && domainEvent.data.events)
        onKinds?.(domainEvent.data.events);
    },
  });
  return { projection, changes: () => changes };
}

export async function projectWebhook(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const webhooks = readModels.collection<WebhookDocument>(WEBHOOKS);
  const domainEvent = { type: event.type, data: event.data } as WebhookEvent;
  const update = updateFor(domainEvent);
  if (update) await webhooks.upsert(domainEvent.data.webhookId, event.revision, update);
}

function updateFor(event: WebhookEvent): Record<string, unknown> | undefined {
  switch (event.type) {
    case "WebhookRegistered": {
      const {
        webhookId,
        url,
        events,
        description,
        signatureAlgorithms,
        filter,
        ordered,
        rateLimit,
        auth,
        createdAt,
      } = event.data;
      const webhook: Webhook = {
        id: webhookId,
        url,
        events,
        description,
        signatureAlgorithms,
        filter: filter ?? null,
        ordered: ordered ?? false,
        rateLimit: rateLimit ?? null,
        auth: maskedAuth(auth),
        status: "active",
        statusReason: null,
        statusSince: createdAt,
        failingSince: null,
        previousSecretExpiresAt: null,
        createdAt,
        updatedAt: createdAt,
      };
      return { $set: { webhook, events, deleted: false } };
    }
    case "WebhookUpdated": {
      const { url, events, description, signatureAlgorithms, filter, ordered, rateLimit, auth, updatedAt } =
        event.data;
      return {
        $set: {
          ...(url !== undefined ? { "webhook.url": url } : {}),
          ...(events !== undefined ? { "webhook.events": events, events } : {}),
          ...(description !== undefined ? { "webhook.description": description } : {}),
          ...(signatureAlgorithms !== undefined
            ? { "webhook.signatureAlgorithms": signatureAlgorithms }
            : {}),
          ...(filter !== undefined ? { "webhook.filter": filter } : {}),
          ...(ordered !== undefined ? { "webhook.ordered": ordered } : {}),
          ...(rateLimit !== undefined ? { "webhook.rateLimit": rateLimit } : {}),
          ...(auth !== undefined ? { "webhook.auth": maskedAuth(auth) } : {}),
          "webhook.updatedAt": updatedAt,
        },
      };
    }
    case "WebhookPaused":
      return status("paused", event.data.reason, event.data.at, null);
    case "WebhookResumed":
      return status("active", null, event.data.at, null);
    case "WebhookDisabled":
      return status("disabled", event.data.reason, event.data.at, event.data.failingSince);
    case "WebhookSecretRotated":
      return {
        $set: {
          "webhook.previousSecretExpiresAt": event.data.previousExpiresAt,
          "webhook.updatedAt": event.data.at,
        },
      };
    case "WebhookDeleted":
      return { $set: { deleted: true } };
    default:
      return undefined;
  }
}

function status(
  value: Webhook["status"],
  reason: string | null,
  at: string,
  failingSince: string | null,
): Record<string, unknown> {
  return {
    $set: {
      "webhook.status": value,
      "webhook.statusReason": reason,
      "webhook.statusSince": at,
      "webhook.failingSince": failingSince,
      "webhook.updatedAt": at,
    },
  };
}

/** The registration as callers see it at `now`: a previous secret whose overlap ended is not shown. */
export function webhookAt(document: WebhookDocument, now: number): Webhook {
  // A document projected before ordered lanes existed has no `ordered`: it is not ordered.
  const webhook = { ...document.webhook, ordered: document.webhook.ordered ?? false };
  const expires = webhook.previousSecretExpiresAt;
  return expires && Date.parse(expires) <= now ? { ...webhook, previousSecretExpiresAt: null } : webhook;
}
