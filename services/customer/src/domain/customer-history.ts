import type { CustomerHistoryEntry, HistoryChange } from "@cheese/contracts";
import type { CustomerEvent } from "./customer.ts";

/** The account's personal data as its owner may read it: opened, without the password hash. */
export interface OpenedProfile {
  firstName?: string;
  lastName?: string;
  email: string;
  phone: string | null;
}

/**
 * What a customer's own history shows of each event of their account. Personal data is passed in
 * opened (or undefined when it can no longer be read); key hashes never leave the service.
 * Events only the service needs are left out.
 */
export function customerHistoryEntry(
  event: CustomerEvent,
  personal: OpenedProfile | undefined,
): HistoryChange<CustomerHistoryEntry> | undefined {
  switch (event.type) {
    case "CustomerRegistered":
    case "CustomerUpdated": {
      const { username, favouriteCheese } = event.data;
      const type = event.type === "CustomerRegistered" ? "customer.registered" : "customer.updated";
      return { type, data: { username, ...personal, favouriteCheese } };
    }
    case "DeliveredOrderCounted": {
      const { orderId, total, deliveredTotal } = event.data;
      return { type: "customer.order_counted", data: { orderId, total, deliveredTotal } };
    }
    case "CustomerStatusChanged":
      return { type: "customer.status_changed", data: { from: event.data.from, to: event.data.to } };
    case "CustomerPasswordChanged":
      return { type: "customer.password_changed", data: { revokedApiKeys: event.data.apiKeyIds } };
    case "ApiKeyIssued": {
      const { keyId, prefix, expiresAt } = event.data;
      return { type: "api_key.issued", data: { keyId, prefix, expiresAt } };
    }
    case "ApiKeyRevoked":
      return { type: "api_key.revoked", data: { keyId: event.data.keyId } };
    case "ApiKeyExpiring": {
      const { keyId, prefix, expiresAt } = event.data;
      return { type: "api_key.expiring", data: { keyId, prefix, expiresAt } };
    }
    default:
      return undefined;
  }
}
