import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";

/** Which of the catalogue's domain events others may see, and under which subject. */
export function toIntegrationEvent(
  event: RecordedEvent,
): Omit<IntegrationEvent, "id" | "headers"> | undefined {
  switch (event.type) {
    case "CheeseAdded":
      return { subject: "events.catalogue.cheese.added", payload: event.data };
    default:
      return undefined;
  }
}
