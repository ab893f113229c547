import { customerEvents } from "@cheese/contracts";
import { type Closable, consumeEvents, type MessageBus } from "@cheese/messaging";
import type { Logger } from "@cheese/service-kit";
import type { CustomerDirectory } from "./customer-directory.ts";
import type { OAuthGrants } from "./oauth-grants.ts";
import type { Revocations } from "./revocations.ts";

/**
 * A deleted customer's sessions, OAuth tokens and API keys stop working: on customer.deleted
 * (durable, shared by the gateway replicas, so each deletion is handled once however many there
 * are, and after a crash too) every credential of the customer is revoked in the shared
 * revocations bucket, which every replica watches. DELETE /customer answers once it is.
 */
export function revokeDeletedCustomers(
  bus: MessageBus,
  identity: { revocations: Revocations; customers: CustomerDirectory; grants: OAuthGrants },
  logger: Logger,
): Closable {
  return consumeEvents(bus, {
    durable: "gateway-revocations",
    events: [customerEvents.customerDeleted],
    async handler(event) {
      const { customerId } = event.payload;
      await identity.revocations.revokeCustomer(customerId);
      identity.customers.forget(customerId);
      await identity.grants.forgetCustomer(customerId);
    },
    onInvalid: (event, error) =>
      logger.error({ err: error, eventId: event.id }, "invalid customer.deleted dropped"),
  });
}
