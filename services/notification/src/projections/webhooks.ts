import type { Webhook, WebhookEventKind } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { Document, ReadModelStore } from "@cheese/read-models";
import type { WebhookEvent } from "../domain/webhook.ts";
import type { SealedSecret } from "../security/secrets.ts";

/** The `webhooks` read model: one document per registration, `_id` = webhook id. */
export interface WebhookDocument extends Document {
  _id: number;
  webhook: Webhook;
  /** Kinds wanted, top-level so `{ events: kind }` finds the subscribers. */
  events: WebhookEventKind[];
  secret: SealedSecret;
  deleted: boolean;
}

export const WEBHOOKS = "webhooks";

export async function projectWebhook(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const webhooks = readModels.collection<WebhookDocument>(WEBHOOKS);
  const domainEvent = { type: event.type, data: event.data } as WebhookEvent;
  switch (domainEvent.type) {
    case "WebhookRegistered": {
      const { webhookId, url, events, description, secret, createdAt } = domainEvent.data;
      await webhooks.upsert(webhookId, event.revision, {
        $set: {
          webhook: { id: webhookId, url, events, description, createdAt },
          events,
          secret,
          deleted: false,
        },
      });
      return;
    }
    case "WebhookDeleted":
      await webhooks.upsert(domainEvent.data.webhookId, event.revision, { $set: { deleted: true } });
      return;
  }
}
