import { customerEvents } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { IntegrationEvent } from "@cheese/messaging";
import type { CustomerEvent } from "./domain/customer.ts";

/**
 * Which customer events others may see. Payloads carry ids and the username, never personal
 * data: names, email and phone stay sealed in the customer's own events.
 */
export function toIntegrationEvent(
  event: RecordedEvent,
): Omit<IntegrationEvent, "id" | "headers"> | undefined {
  const domainEvent = { type: event.type, data: event.data } as CustomerEvent;
  switch (domainEvent.type) {
    case "CustomerRegistered": {
      const { customerId, username } = domainEvent.data;
      return { subject: customerEvents.customerCreated.subject, payload: { customerId, username } };
    }
    case "CustomerUpdated": {
      const { customerId, username } = domainEvent.data;
      return { subject: customerEvents.customerUpdated.subject, payload: { customerId, username } };
    }
    case "CustomerDeleted": {
      const { customerId, username } = domainEvent.data;
      return { subject: customerEvents.customerDeleted.subject, payload: { customerId, username } };
    }
    case "CustomerPasswordChanged": {
      const { customerId, username, passwordVersion, keptSession, apiKeyIds } = domainEvent.data;
      return {
        subject: customerEvents.customerPasswordChanged.subject,
        payload: { customerId, username, passwordVersion, keptSession, apiKeyIds },
      };
    }
    case "CustomerStatusChanged":
      return { subject: customerEvents.customerStatusChanged.subject, payload: domainEvent.data };
    case "ApiKeyExpiring": {
      const { customerId, username, keyId, prefix, expiresAt } = domainEvent.data;
      return {
        subject: customerEvents.apiKeyExpiring.subject,
        payload: { customerId, username, keyId: String(keyId), prefix, expiresAt },
      };
    }
    default:
      return undefined;
  }
}
