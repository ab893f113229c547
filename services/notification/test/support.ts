import type { WebhookEventKind } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { handleCommand } from "@cheese/service-kit";
import { webhookDecider, webhookStream } from "../src/domain/webhook.ts";
import type { SecretBox } from "../src/security/secrets.ts";

/** Registers a webhook straight in the event store, as `POST /webhooks` records it. */
export async function registerWebhook(
  store: EventStore,
  secrets: SecretBox,
  registration: {
    webhookId: number;
    events: WebhookEventKind[];
    createdAt: string;
    url?: string;
    secret?: string;
  },
): Promise<void> {
  const { url = "https://hooks.example.com/", secret = "whsec_x", ...rest } = registration;
  await handleCommand(store, webhookStream(registration.webhookId), webhookDecider, {
    type: "Register",
    registration: { ...rest, url, description: null, secret: secrets.seal(secret) },
  });
}
