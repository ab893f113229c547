import { customerEvents } from "@cheese/contracts";
import { type Closable, consumeEvents, type MessageBus } from "@cheese/messaging";
import type { Logger } from "@cheese/service-kit";
import type { OAuthGrants } from "./oauth-grants.ts";
import type { Revocations } from "./revocations.ts";

/**
 * A deleted customer's sessions, OAuth tokens and API keys stop working: on customer.deleted
 * (durable, shared by the replicas, so each deletion is handled once however many there are, and
 * after a crash too) every credential of the customer is revoked in the revocations bucket every
 * gateway watches, and its grants are forgotten. DELETE /customer answers once it is.
 */
export function revokeDeletedCustomers(
  bus: MessageBus,
  identity: { revocations: Revocations; grants: OAuthGrants },
  logger: Logger,
): Closable {
  return consumeEvents(bus, {
    durable: "customer-credentials-erased",
    events: [customerEvents.customerDeleted],
    async handler(event) {
      const { customerId } = event.payload;
      await identity.revocations.revokeCustomer(customerId);
      await identity.grants.forgetCustomer(customerId);
    },
    onInvalid: (event, error) =>
      logger.error({ err: error, eventId: event.id }, "invalid customer.deleted dropped"),
  });
}
