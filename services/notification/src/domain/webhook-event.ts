import type { WebhookEventKind } from "@cheese/contracts";
import type { Decider, DomainEvent } from "@cheese/service-kit";

/**
 * One outgoing event and the deliveries planned for it, recorded before any delivery exists.
 * A redelivered integration event finds this record and re-creates only the missing deliveries,
 * with the same ids, so a crash half way through a fan-out neither loses nor doubles one.
 */
export interface RecordedWebhookEvent {
  eventId: string;
  type: WebhookEventKind;
  createdAt: string;
  /** The exact JSON sent to every receiver; signatures are computed over these bytes. */
  body: string;
  /** The revision of the event in its aggregate's stream, when the integration event said it. */
  revision?: number;
  /** `lane`: the ordered lane's stream, for a registration that was ordered (domain/lane.ts). */
  deliveries: { webhookId: number; deliveryId: number; lane?: string }[];
}

export type WebhookEventEvent = DomainEvent<"WebhookEventRecorded", RecordedWebhookEvent>;
export type WebhookEventCommand = { type: "Record"; event: RecordedWebhookEvent };
export type WebhookEventState = { recorded: RecordedWebhookEvent | undefined };

/** `evt_<32 hex>`; the stream is keyed by the hex part. */
export const webhookEventStream = (eventId: string) => `webhookevent-${eventId.replace(/^evt_/, "")}`;

export const webhookEventDecider: Decider<WebhookEventState, WebhookEventCommand, WebhookEventEvent> = {
  initialState: () => ({ recorded: undefined }),
  evolve: (state, event) => (event.type === "WebhookEventRecorded" ? { recorded: event.data } : state),
  // Recording twice keeps the first plan: that is what makes the fan-out idempotent.
  decide: (command, state) => (state.recorded ? [] : [{ type: "WebhookEventRecorded", data: command.event }]),
};
