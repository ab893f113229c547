import type { CustomerStatus } from "@cheese/contracts";
import {
  conflict,
  type Decider,
  type DomainEvent,
  forbidden,
  notFound,
  validationFailed,
} from "@cheese/service-kit";
import { addMoney, tierFor } from "./tiers.ts";

/**
 * The customer aggregate, one stream `customer-<id>`. Personal data (names, email, phone and the
 * password hash) travels only as `personal`, ciphertext under the customer's own key, so erasing
 * the key erases it from every event (crypto-shredding). `emailKey` is a keyed hash of the
 * normalised email, never the email. The decider never sees plaintext.
 */

/** A favourite cheese as stored: the catalogue id when chosen by id, and always a name. */
export interface FavouriteRef {
  id?: number;
  name: string;
}

export interface ApiKeyRecord {
  keyId: number;
  keyHash: string;
  prefix: string;
  createdAt: string;
  expiresAt: string;
  revoked: boolean;
  warned: boolean;
}

export interface CustomerData {
  customerId: number;
  username: string;
  emailKey: string;
  personal: string;
  favouriteCheese: FavouriteRef | null;
  customerStatus: CustomerStatus;
  createdAt: string;
  deliveredTotal: number;
  countedOrders: number[];
  apiKeys: ApiKeyRecord[];
  /** How many times the password was changed: credentials issued under an older one are revoked. */
  passwordVersion: number;
}

export type CustomerState =
  | { status: "absent" }
  | { status: "active"; customer: CustomerData }
  | { status: "deleted"; customerId: number };

interface Profile {
  username: string;
  emailKey: string;
  personal: string;
  favouriteCheese: FavouriteRef | null;
}

export type CustomerEvent =
  | DomainEvent<"CustomerRegistered", Profile & { customerId: number; createdAt: string }>
  | DomainEvent<"CustomerUpdated", Profile & { customerId: number; updatedAt: string }>
  /**
   * After a CustomerUpdated that changed the password: every credential issued under an older
   * password version ends (sessions but `keptSession`, OAuth grants, and the API keys named).
   */
  | DomainEvent<
      "CustomerPasswordChanged",
      {
        customerId: number;
        username: string;
        passwordVersion: number;
        /** The session (token id) that made the change, which goes on working. */
        keptSession: string | null;
        apiKeyIds: number[];
        changedAt: string;
      }
    >
  | DomainEvent<
      "CustomerDeleted",
      { customerId: number; username: string; apiKeyIds: number[]; deletedAt: string }
    >
  | DomainEvent<
      "DeliveredOrderCounted",
      { customerId: number; orderId: number; total: number; deliveredTotal: number }
    >
  | DomainEvent<
      "CustomerStatusChanged",
      { customerId: number; username: string; from: CustomerStatus; to: CustomerStatus }
    >
  | DomainEvent<
      "ApiKeyIssued",
      {
        customerId: number;
        keyId: number;
        keyHash: string;
        prefix: string;
        createdAt: string;
        expiresAt: string;
      }
    >
  | DomainEvent<"ApiKeyRevoked", { customerId: number; keyId: number; revokedAt: string }>
  | DomainEvent<
      "ApiKeyExpiring",
      { customerId: number; username: string; keyId: number; prefix: string; expiresAt: string }
    >;

export type CustomerCommand =
  | ({ type: "Register"; customerId: number; at: string } & Profile)
  | ({
      type: "Replace";
      at: string;
      /** Whether the new password differs from the current one (the handler checked the hash). */
      passwordChanged: boolean;
      /** The current password as the request gave it, checked against the hash of `checkedVersion`. */
      currentPassword: "absent" | "wrong" | "right";
      checkedVersion: number;
      /** The session making the change; it survives a password change. */
      session: string | null;
    } & Profile)
  | { type: "Delete"; at: string }
  | { type: "CountDeliveredOrder"; orderId: number; total: number }
  | {
      type: "IssueApiKey";
      keyId: number;
      keyHash: string;
      prefix: string;
      createdAt: string;
      expiresAt: string;
    }
  | { type: "RevokeApiKey"; keyId: number; at: string }
  | { type: "WarnApiKeyExpiring"; keyId: number };

/** Live keys per customer; more is almost certainly a leak or a script gone wrong. */
export const MAX_ACTIVE_API_KEYS = 25;

/**
 * The one refusal for a username or an email someone else holds: it never says which, so a
 * registration does not tell whether an email is registered (docs/identity.md "Uniqueness").
 */
export const IDENTITY_TAKEN = "username or email exists";

export const customerStream = (id: number) => `customer-${id}`;

/**
 * Usernames and emails are unique (the service kit's reservations), each under a stream of its
 * normalised value. Email streams are named by a keyed hash of the normalised email (see
 * personal-data/vault.ts), so no stream name or event holds an email.
 */
export const usernameStream = (username: string) => `customername-${username.toLowerCase()}`;
export const emailStream = (emailKey: string) => `customeremail-${emailKey}`;

const customerNotFound = () => notFound("customer not found");

/** The customer of a state that must be active (404 otherwise). */
export function activeCustomer(state: CustomerState): CustomerData {
  if (state.status !== "active") throw customerNotFound();
  return state.customer;
}

export const customerDecider: Decider<CustomerState, CustomerCommand, CustomerEvent> = {
  initialState: () => ({ status: "absent" }),
  evolve(state, event) {
    if (event.type === "CustomerRegistered") {
      const { customerId, username, emailKey, personal, favouriteCheese, createdAt } = event.data;
      return {
        status: "active",
        customer: {
          customerId,
          username,
          emailKey,
          personal,
          favouriteCheese,
          customerStatus: "bronze",
          createdAt,
          deliveredTotal: 0,
          countedOrders: [],
          apiKeys: [],
          passwordVersion: 0,
        },
      };
    }
    if (state.status !== "active") return state;
    const customer = state.customer;
    switch (event.type) {
      case "CustomerUpdated": {
        const { username, emailKey, personal, favouriteCheese } = event.data;
        return { status: "active", customer: { ...customer, username, emailKey, personal, favouriteCheese } };
      }
      case "CustomerPasswordChanged":
        return { status: "active", customer: { ...customer, passwordVersion: event.data.passwordVersion } };
      case "CustomerDeleted":
        return { status: "deleted", customerId: customer.customerId };
      case "DeliveredOrderCounted":
        return {
          status: "active",
          customer: {
            ...customer,
            deliveredTotal: event.data.deliveredTotal,
            countedOrders: [...customer.countedOrders, event.data.orderId],
          },
        };
      case "CustomerStatusChanged":
        return { status: "active", customer: { ...customer, customerStatus: event.data.to } };
      case "ApiKeyIssued": {
        const { keyId, keyHash, prefix, createdAt, expiresAt } = event.data;
        const key = { keyId, keyHash, prefix, createdAt, expiresAt, revoked: false, warned: false };
        return { status: "active", customer: { ...customer, apiKeys: [...customer.apiKeys, key] } };
      }
      case "ApiKeyRevoked":
        return withKey(customer, event.data.keyId, { revoked: true });
      case "ApiKeyExpiring":
        return withKey(customer, event.data.keyId, { warned: true });
      default:
        return state;
    }
  },
  decide(command, state) {
    if (command.type === "Register") {
      if (state.status !== "absent") throw conflict("customer already exists");
      const { customerId, username, emailKey, personal, favouriteCheese, at } = command;
      return [
        {
          type: "CustomerRegistered",
          data: { customerId, username, emailKey, personal, favouriteCheese, createdAt: at },
        },
      ];
    }
    // Events from elsewhere (deliveries, the expiry scheduler) about a gone customer are no-ops.
    if (state.status !== "active") {
      if (command.type === "CountDeliveredOrder" || command.type === "WarnApiKeyExpiring") return [];
      throw customerNotFound();
    }
    const customer = state.customer;
    const { customerId } = customer;
    switch (command.type) {
      case "Replace":
        return replace(customer, command);
      case "Delete":
        return [
          {
            type: "CustomerDeleted",
            data: {
              customerId,
              username: customer.username,
              apiKeyIds: customer.apiKeys.filter((k) => !k.revoked).map((k) => k.keyId),
              deletedAt: command.at,
            },
          },
        ];
      case "CountDeliveredOrder":
        return countDeliveredOrder(customer, command.orderId, command.total);
      case "IssueApiKey": {
        if (customer.apiKeys.filter((k) => !k.revoked).length >= MAX_ACTIVE_API_KEYS) {
          throw conflict(`at most ${MAX_ACTIVE_API_KEYS} API keys may be active; revoke one first`);
        }
        const { keyId, keyHash, prefix, createdAt, expiresAt } = command;
        return [{ type: "ApiKeyIssued", data: { customerId, keyId, keyHash, prefix, createdAt, expiresAt } }];
      }
      case "RevokeApiKey": {
        const key = customer.apiKeys.find((k) => k.keyId === command.keyId);
        if (!key || key.revoked) throw notFound(`API key ${command.keyId} not found`);
        return [{ type: "ApiKeyRevoked", data: { customerId, keyId: key.keyId, revokedAt: command.at } }];
      }
      case "WarnApiKeyExpiring": {
        const key = customer.apiKeys.find((k) => k.keyId === command.keyId);
        if (!key || key.revoked || key.warned) return [];
        const { keyId, prefix, expiresAt } = key;
        return [
          {
            type: "ApiKeyExpiring",
            data: { customerId, username: customer.username, keyId, prefix, expiresAt },
          },
        ];
      }
    }
  },
};

/**
 * Replaces the profile. Changing the password or the email needs the current password (someone
 * holding only a session cannot take the account over); a password change ends every other
 * credential: the API keys now (ApiKeyRevoked), sessions and OAuth grants at the gateway (from
 * CustomerPasswordChanged).
 */
function replace(customer: CustomerData, command: Extract<CustomerCommand, { type: "Replace" }>) {
  const { customerId } = customer;
  const { username, emailKey, personal, favouriteCheese, at, passwordChanged } = command;
  // Always needed: a replacement always carries a password, and answering one without
  // currentPassword would tell whether that password is the current one.
  if (command.currentPassword === "absent") {
    throw validationFailed("the current password is needed to replace the account", [
      { field: "currentPassword", message: "required" },
    ]);
  }
  if (command.currentPassword === "wrong") {
    throw forbidden("currentPassword is not this account's password");
  }
  if (passwordChanged || emailKey !== customer.emailKey) {
    if (command.checkedVersion !== customer.passwordVersion) {
      throw conflict("the password was changed meanwhile; try again with the current one");
    }
  }
  const events: CustomerEvent[] = [
    {
      type: "CustomerUpdated",
      data: { customerId, username, emailKey, personal, favouriteCheese, updatedAt: at },
    },
  ];
  if (!passwordChanged) return events;
  const liveKeys = customer.apiKeys.filter((key) => !key.revoked).map((key) => key.keyId);
  for (const keyId of liveKeys) {
    events.push({ type: "ApiKeyRevoked", data: { customerId, keyId, revokedAt: at } });
  }
  events.push({
    type: "CustomerPasswordChanged",
    data: {
      customerId,
      username,
      passwordVersion: customer.passwordVersion + 1,
      keptSession: command.session,
      apiKeyIds: liveKeys,
      changedAt: at,
    },
  });
  return events;
}

/** Adds a delivered order's total once per order id, and moves the tier when it crosses a line. */
function countDeliveredOrder(customer: CustomerData, orderId: number, total: number): CustomerEvent[] {
  if (customer.countedOrders.includes(orderId)) return [];
  const deliveredTotal = addMoney(customer.deliveredTotal, total);
  const events: CustomerEvent[] = [
    {
      type: "DeliveredOrderCounted",
      data: { customerId: customer.customerId, orderId, total, deliveredTotal },
    },
  ];
  const to = tierFor(deliveredTotal);
  if (to !== customer.customerStatus) {
    events.push({
      type: "CustomerStatusChanged",
      data: {
        customerId: customer.customerId,
        username: customer.username,
        from: customer.customerStatus,
        to,
      },
    });
  }
  return events;
}

function withKey(customer: CustomerData, keyId: number, change: Partial<ApiKeyRecord>): CustomerState {
  return {
    status: "active",
    customer: {
      ...customer,
      apiKeys: customer.apiKeys.map((key) => (key.keyId === keyId ? { ...key, ...change } : key)),
    },
  };
}
