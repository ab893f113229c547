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
    given([registered])
      .when({ type: "Replace", ...changed, at })
      .thenEmits([{ type: "CustomerUpdated", data: { customerId: 7, ...changed, updatedAt: at } }]);
    const deleted: CustomerEvent = {
      type: "CustomerDeleted",
      data: { customerId: 7, username: "alice", apiKeyIds: [], deletedAt: at },
    };
    given([registered, deleted])
      .when({ type: "Replace", ...changed, at })
      .thenRefuses({ body: { status: 404, type: "not_found" } });
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
