import { customerEvents } from "@cheese/contracts";
import { type Closable, consumeEvents, type MessageBus } from "@cheese/messaging";
import type { Logger } from "@cheese/service-kit";
import type { OAuthGrants } from "./oauth-grants.ts";
import type { Revocations } from "./revocations.ts";

/**
 * After a password change everything issued under the old password ends, on every gateway: on
 * customer.password_changed (durable, shared by the replicas, so handled once and after a crash
 * too) the customer's sessions of older password versions but the one that made the change, its
 * OAuth grants of older versions (their access and refresh tokens), and the API keys the event
 * names are revoked in the revocations bucket every gateway watches. PUT /customer answers once
 * that is in force.
 */
export function revokeOnPasswordChange(
  bus: MessageBus,
  identity: { revocations: Revocations; grants: OAuthGrants },
  logger: Logger,
): Closable {
  return consumeEvents(bus, {
    durable: "customer-credentials-password",
    events: [customerEvents.customerPasswordChanged],
    async handler(event) {
      const { customerId, passwordVersion, keptSession, apiKeyIds } = event.payload;
      for (const keyId of apiKeyIds) await identity.revocations.revokeApiKey(keyId);
      await identity.grants.revokeGrantsBefore(customerId, passwordVersion);
      // Last: the PUT that changed the password answers once this one is known.
      await identity.revocations.revokeOlderCredentials(customerId, passwordVersion, keptSession);
    },
    onInvalid: (event, error) =>
      logger.error({ err: error, eventId: event.id }, "invalid customer.password_changed dropped"),
  });
}
