import { specFor } from "@cheese/service-kit/testing";
import { describe, it } from "vitest";
import { type CustomerEvent, customerDecider, MAX_ACTIVE_API_KEYS } from "../src/domain/customer.ts";

const given = specFor(customerDecider);
const at = "2025-01-01T00:00:00.000Z";
const profile = { username: "alice", emailKey: "e1", personal: "v1:sealed", favouriteCheese: null };
const registered: CustomerEvent = {
  type: "CustomerRegistered",
  data: { customerId: 7, ...profile, createdAt: at },
};
const counted = (orderId: number, total: number, deliveredTotal: number): CustomerEvent => ({
  type: "DeliveredOrderCounted",
  data: { customerId: 7, orderId, total, deliveredTotal },
});
const keyIssued = (keyId: number): CustomerEvent => ({
  type: "ApiKeyIssued",
  data: { customerId: 7, keyId, keyHash: `h${keyId}`, prefix: `chs_${keyId}`, createdAt: at, expiresAt: at },
});

describe("customer decider", () => {
  it("registers a new customer, and refuses to register one twice", () => {
    given([])
      .when({ type: "Register", customerId: 7, ...profile, at })
      .thenEmits([registered]);
    given([registered])
      .when({ type: "Register", customerId: 7, ...profile, at })
      .thenRefuses({ body: { status: 409 } });
  });

  it("replaces the profile of an active customer, and answers 404 for a deleted one", () => {
    const changed = { ...profile, username: "alice2", personal: "v1:other" };
    const replace = {
      type: "Replace" as const,
      ...changed,
      at,
      passwordChanged: false,
      currentPassword: "right" as const,
      checkedVersion: 0,
      session: null,
    };
    given([registered])
      .when(replace)
      .thenEmits([{ type: "CustomerUpdated", data: { customerId: 7, ...changed, updatedAt: at } }]);
    const deleted: CustomerEvent = {
      type: "CustomerDeleted",
      data: { customerId: 7, username: "alice", apiKeyIds: [], deletedAt: at },
    };
    given([registered, deleted])
      .when(replace)
      .thenRefuses({ body: { status: 404, type: "not_found" } });
  });

  describe("changing the password or the email", () => {
    const replace = (change: Record<string, unknown>) => ({
      type: "Replace" as const,
      ...profile,
      at,
      passwordChanged: false,
      currentPassword: "absent" as const,
      checkedVersion: 0,
      session: "session-1",
      ...change,
    });
    const updated = (change: Record<string, unknown> = {}): CustomerEvent => ({
      type: "CustomerUpdated",
      data: { customerId: 7, ...profile, updatedAt: at, ...change },
    });

    it("needs the current password whatever changes: 422 naming currentPassword without it, 403 when wrong", () => {
      // Names too: a refusal only when the password changes would tell whether it is the current one.
      for (const change of [{ passwordChanged: true }, { emailKey: "e2" }, { personal: "v1:renamed" }, {}]) {
        given([registered])
          .when(replace(change))
          .thenRefuses({
            body: { status: 422, errors: [{ field: "currentPassword", message: "required" }] },
          });
        given([registered])
          .when(replace({ ...change, currentPassword: "wrong" }))
          .thenRefuses({ body: { status: 403, message: "currentPassword is not this account's password" } });
      }
      given([registered])
        .when(replace({ personal: "v1:renamed", currentPassword: "right" }))
        .thenEmits([updated({ personal: "v1:renamed" })]);
    });

    it("ends the API keys and names the new password version and the session kept", () => {
      given([
        registered,
        keyIssued(1),
        keyIssued(2),
        { type: "ApiKeyRevoked", data: { customerId: 7, keyId: 1, revokedAt: at } },
      ])
        .when(replace({ passwordChanged: true, currentPassword: "right", personal: "v1:new" }))
        .thenEmits([
          updated({ personal: "v1:new" }),
          { type: "ApiKeyRevoked", data: { customerId: 7, keyId: 2, revokedAt: at } },
          {
            type: "CustomerPasswordChanged",
            data: {
              customerId: 7,
              username: "alice",
              passwordVersion: 1,
              keptSession: "session-1",
              apiKeyIds: [2],
              changedAt: at,
            },
          },
        ]);
    });

    it("refuses with 409 when the password changed after the current one was checked", () => {
      const changed: CustomerEvent = {
        type: "CustomerPasswordChanged",
        data: {
          customerId: 7,
          username: "alice",
          passwordVersion: 1,
          keptSession: null,
          apiKeyIds: [],
          changedAt: at,
        },
      };
      given([registered, changed])
        .when(replace({ passwordChanged: true, currentPassword: "right", checkedVersion: 0 }))
        .thenRefuses({ body: { status: 409 } });
      given([registered, changed])
        .when(replace({ passwordChanged: true, currentPassword: "right", checkedVersion: 1 }))
        .thenEmits([
          updated(),
          {
            type: "CustomerPasswordChanged",
            data: { ...changed.data, passwordVersion: 2, keptSession: "session-1" } as never,
          },
        ]);
    });
  });

  it("deletes a customer and names its live API keys, so they can be revoked everywhere", () => {
    given([
      registered,
      keyIssued(1),
      keyIssued(2),
      { type: "ApiKeyRevoked", data: { customerId: 7, keyId: 1, revokedAt: at } },
    ])
      .when({ type: "Delete", at })
      .thenEmits([
        {
          type: "CustomerDeleted",
          data: { customerId: 7, username: "alice", apiKeyIds: [2], deletedAt: at },
        },
      ]);
    given([])
      .when({ type: "Delete", at })
      .thenRefuses({ body: { status: 404 } });
  });

  describe("tiers from delivered orders", () => {
    it("adds an order's total and stays bronze below $100", () => {
      given([registered])
        .when({ type: "CountDeliveredOrder", orderId: 1, total: 99.99 })
        .thenEmits([counted(1, 99.99, 99.99)]);
    });

    it("moves to silver at exactly $100, summing in cents", () => {
      given([registered, counted(1, 99.9, 99.9)])
        .when({ type: "CountDeliveredOrder", orderId: 2, total: 0.1 })
        .thenEmits([
          counted(2, 0.1, 100),
          {
            type: "CustomerStatusChanged",
            data: { customerId: 7, username: "alice", from: "bronze", to: "silver" },
          },
        ]);
    });

    it("moves straight from bronze to gold at $500 and to platinum at $2,000", () => {
      given([registered])
        .when({ type: "CountDeliveredOrder", orderId: 1, total: 500 })
        .thenEmits([
          counted(1, 500, 500),
          {
            type: "CustomerStatusChanged",
            data: { customerId: 7, username: "alice", from: "bronze", to: "gold" },
          },
        ]);
      const gold: CustomerEvent = {
        type: "CustomerStatusChanged",
        data: { customerId: 7, username: "alice", from: "bronze", to: "gold" },
      };
      given([registered, counted(1, 1999.99, 1999.99), gold])
        .when({ type: "CountDeliveredOrder", orderId: 2, total: 0.01 })
        .thenEmits([
          counted(2, 0.01, 2000),
          {
            type: "CustomerStatusChanged",
            data: { customerId: 7, username: "alice", from: "gold", to: "platinum" },
          },
        ]);
    });

    it("counts each order once, however often its delivery is redelivered", () => {
      given([registered, counted(1, 80, 80)])
        .when({ type: "CountDeliveredOrder", orderId: 1, total: 80 })
        .thenEmits([]);
    });

    it("ignores deliveries for a customer that does not exist (any more)", () => {
      given([]).when({ type: "CountDeliveredOrder", orderId: 1, total: 80 }).thenEmits([]);
    });
  });

  describe("API keys", () => {
    it("issues a key and caps the number of live keys", () => {
      given([registered])
        .when({
          type: "IssueApiKey",
          keyId: 1,
          keyHash: "h1",
          prefix: "chs_1",
          createdAt: at,
          expiresAt: at,
        })
        .thenEmits([keyIssued(1)]);
      const many = Array.from({ length: MAX_ACTIVE_API_KEYS }, (_, i) => keyIssued(i + 1));
      given([registered, ...many])
        .when({ type: "IssueApiKey", keyId: 99, keyHash: "h", prefix: "p", createdAt: at, expiresAt: at })
        .thenRefuses({ body: { status: 409 } });
    });

    it("revokes a live key once; an unknown or revoked key is 404", () => {
      const revoked: CustomerEvent = {
        type: "ApiKeyRevoked",
        data: { customerId: 7, keyId: 1, revokedAt: at },
      };
      given([registered, keyIssued(1)])
        .when({ type: "RevokeApiKey", keyId: 1, at })
        .thenEmits([revoked]);
      given([registered, keyIssued(1), revoked])
        .when({ type: "RevokeApiKey", keyId: 1, at })
        .thenRefuses({ body: { status: 404 } });
      given([registered])
        .when({ type: "RevokeApiKey", keyId: 5, at })
        .thenRefuses({ body: { status: 404 } });
    });

    it("warns once that a key is expiring, and never for a revoked key", () => {
      const warning: CustomerEvent = {
        type: "ApiKeyExpiring",
        data: { customerId: 7, username: "alice", keyId: 1, prefix: "chs_1", expiresAt: at },
      };
      given([registered, keyIssued(1)])
        .when({ type: "WarnApiKeyExpiring", keyId: 1 })
        .thenEmits([warning]);
      given([registered, keyIssued(1), warning])
        .when({ type: "WarnApiKeyExpiring", keyId: 1 })
        .thenEmits([]);
      given([
        registered,
        keyIssued(1),
        { type: "ApiKeyRevoked", data: { customerId: 7, keyId: 1, revokedAt: at } },
      ])
        .when({ type: "WarnApiKeyExpiring", keyId: 1 })
        .thenEmits([]);
    });
  });
});
