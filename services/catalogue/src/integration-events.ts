import { catalogueEvents } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";
import type { CheeseEvent } from "./domain/cheese.ts";

type Published = Omit<IntegrationEvent, "id" | "headers">;

/**
 * Which of the catalogue's domain events others may see, as `catalogueEvents` defines them.
 * An image attached changes photoUrls, so others see it as an update. Payloads are checked
 * against the contract: a mismatch is a bug here, and the relay retries rather than publish it.
 */
export function toIntegrationEvent(event: RecordedEvent): Published | undefined {
  const domainEvent = { type: event.type, data: event.data } as CheeseEvent;
  switch (domainEvent.type) {
    case "CheeseAdded":
      return publish(catalogueEvents.cheeseAdded, { cheese: domainEvent.data.cheese });
    case "CheeseUpdated":
    case "CheeseImageAttached":
      return publish(catalogueEvents.cheeseUpdated, { cheese: domainEvent.data.cheese });
    case "CheeseStatusChanged": {
      const { cheese, from, to } = domainEvent.data;
      return publish(catalogueEvents.cheeseStatusChanged, { cheese, from, to });
    }
    case "CheeseDeleted": {
      const { cheeseId, name } = domainEvent.data;
      return publish(catalogueEvents.cheeseDeleted, { cheeseId, name });
    }
    default:
      return undefined;
  }
}

function publish<T>(
  definition: { subject: string; schema: { parse(value: unknown): T } },
  payload: T,
): Published {
  return { subject: definition.subject, payload: definition.schema.parse(payload) };
}
