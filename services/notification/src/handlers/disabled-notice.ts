import type { RecordedEvent } from "@cheese/event-store";
import { foldEvents, type Logger } from "@cheese/service-kit";
import { noticeEventId } from "../domain/event-mapping.ts";
import { type WebhookEvent, type WebhookState, webhookDecider, webhookStream } from "../domain/webhook.ts";
import type { NotificationDeps } from "./deps.ts";
import { fanOut } from "./fan-out.ts";

type Disabled = Extract<WebhookEvent, { type: "WebhookDisabled" }>["data"];

/**
 * Tells the other registrations that ask for `webhook.disabled` that one was disabled. Every
 * replica's scheduler sees the WebhookDisabled event and calls this; the notice's id derives from
 * that event's id, so the fan-out's record makes it one webhook event with one delivery each.
 */
export function sendDisabledNotice(deps: NotificationDeps, logger: Logger) {
  return async (event: RecordedEvent): Promise<void> => {
    const disabled = event.data as Disabled;
    const state = foldEvents(
      webhookDecider,
      await deps.store.readStream(webhookStream(disabled.webhookId)),
    ) as WebhookState;
    const description = "registration" in state ? state.registration.description : null;
    const recorded = await fanOut(
      deps,
      {
        eventId: noticeEventId(event.id),
        kind: "webhook.disabled",
        data: {
          webhook_id: String(disabled.webhookId),
          description,
          reason: disabled.reason,
          failing_since: disabled.failingSince,
          disabled_at: disabled.at,
        },
      },
      { ...event.metadata, causationId: event.id },
      { except: [disabled.webhookId] },
    );
    logger.warn(
      {
        webhookId: disabled.webhookId,
        failingSince: disabled.failingSince,
        reason: disabled.reason,
        notices: recorded?.deliveries.length ?? 0,
      },
      "webhook disabled",
    );
  };
}
