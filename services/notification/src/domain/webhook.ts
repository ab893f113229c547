import type { WebhookEventKind } from "@cheese/contracts";
import { conflict, type Decider, type DomainEvent, notFound } from "@cheese/service-kit";
import type { SealedSecret } from "../security/secrets.ts";

/** A registration as events hold it; the secret only sealed (see security/secrets.ts). */
export interface Registration {
  webhookId: number;
  url: string;
  events: WebhookEventKind[];
  description: string | null;
  secret: SealedSecret;
  createdAt: string;
}

export type WebhookEvent =
  | DomainEvent<"WebhookRegistered", Registration>
  | DomainEvent<"WebhookDeleted", { webhookId: number; deletedAt: string }>;

export type WebhookCommand =
  | { type: "Register"; registration: Registration }
  | { type: "Delete"; webhookId: number; now: string };

export type WebhookState =
  | { status: "absent" }
  | { status: "active"; registration: Registration }
  | { status: "deleted" };

export const webhookStream = (id: number) => `webhook-${id}`;

export const webhookDecider: Decider<WebhookState, WebhookCommand, WebhookEvent> = {
  initialState: () => ({ status: "absent" }),
  evolve(state, event) {
    switch (event.type) {
      case "WebhookRegistered":
        return { status: "active", registration: event.data };
      case "WebhookDeleted":
        return { status: "deleted" };
      default:
        return state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "Register":
        if (state.status !== "absent") throw conflict("webhook already exists");
        return [{ type: "WebhookRegistered", data: command.registration }];
      case "Delete":
        if (state.status !== "active") {
          throw notFound(`webhook ${command.webhookId} not found`);
        }
        return [{ type: "WebhookDeleted", data: { webhookId: command.webhookId, deletedAt: command.now } }];
    }
  },
};
