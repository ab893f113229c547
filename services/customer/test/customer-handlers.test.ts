import { customerRpc } from "@cheese/contracts";
import { type ServiceSpec, serviceSpec } from "@cheese/service-kit/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { customerService } from "../src/main.ts";

const at = "2026-11-22T10:00:00.000Z";
const alice = {
  username: "alice",
  email: "alice@example.com",
  password: "correct horse battery",
  phone: null,
};

/** Given events, when an RPC, then its reply and the events it appended. */
describe("the customer service's handlers", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(customerService, { start: at });
  });
  afterEach(async () => {
    await spec.stop();
  });

  it("registers a customer: username and email reserved, the personal data sealed, at the clock's time", async () => {
    await spec
      .given()
      .when(customerRpc.register, { fields: alice })
      .thenReturns({
        reply: {
          customer: { id: 1, username: "alice", email: alice.email, customerStatus: "bronze", createdAt: at },
        },
        events: {
          "customername-alice": [{ type: "Reserved", data: { holder: 1, at } }],
          "customer-1": [
            {
              type: "CustomerRegistered",
              data: {
                customerId: 1,
                username: "alice",
                emailKey: expect.stringMatching(/^[0-9a-f]{64}$/),
                personal: expect.stringMatching(/^v1:/),
                favouriteCheese: null,
                createdAt: at,
              },
            },
          ],
        },
      });
    const [registered] = await spec.store.readStream("customer-1");
    expect(JSON.stringify(registered)).not.toContain(alice.email);
  });

  it("refuses a username someone has, in another case (409), and registers no one", async () => {
    await spec.given().when(customerRpc.register, { fields: alice }).thenReturns({});
    await spec
      .given()
      .when(customerRpc.register, { fields: { ...alice, username: "ALICE", email: "other@example.com" } })
      .thenRefuses({ status: 409, message: "username or email exists" }, ["customer-2"]);
  });

  it("refuses an email someone has (409), and writes nothing: no customer, no reservation of its username", async () => {
    await spec.given().when(customerRpc.register, { fields: alice }).thenReturns({});
    await spec
      .given()
      .when(customerRpc.register, { fields: { ...alice, username: "bob" } })
      .thenRefuses({ status: 409, message: "username or email exists" }, ["customer-2", "customername-bob"]);
  });

  it("erases a customer: CustomerDeleted, and its username and email given back", async () => {
    await spec.given().when(customerRpc.register, { fields: alice }).thenReturns({});
    const emailStream = (await spec.store.readStream("customer-1"))[0]!.data as { emailKey: string };
    await spec
      .given()
      .when(customerRpc.delete, { username: "alice", asCustomer: 1, currentPassword: alice.password })
      .thenReturns({
        reply: { customerId: 1 },
        events: {
          "customer-1": [
            {
              type: "CustomerDeleted",
              data: { customerId: 1, username: "alice", apiKeyIds: [], deletedAt: at },
            },
          ],
          "customername-alice": [{ type: "Released", data: { holder: 1 } }],
          [`customeremail-${emailStream.emailKey}`]: [{ type: "Released", data: { holder: 1 } }],
        },
      });
  });
});

describe("API-key expiry warnings, on the service's clock", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(customerService, {
      start: at,
      env: { API_KEY_LIFETIME: "2h", API_KEY_EXPIRY_WARNING: "1h" },
    });
  });
  afterEach(async () => {
    await spec.stop();
  });

  const warnings = async () =>
    (await spec.store.readStream("customer-1")).filter((event) => event.type === "ApiKeyExpiring");

  it("warns of a key once, when the clock reaches its warning window, and never of a revoked one", async () => {
    await spec.given().when(customerRpc.register, { fields: alice }).thenReturns({});
    const kept = await spec.call(customerRpc.createApiKey, { username: "alice", asCustomer: 1 });
    const revoked = await spec.call(customerRpc.createApiKey, { username: "alice", asCustomer: 1 });
    await spec.call(customerRpc.revokeApiKey, { username: "alice", keyId: revoked.id, asCustomer: 1 });
    await spec.clock.advance(3_600_000 - 1);
    expect(await warnings()).toEqual([]);
    await spec.clock.advance(1);
    await expect
      .poll(async () => (await warnings()).map((event) => event.data))
      .toEqual([expect.objectContaining({ keyId: kept.id })]);
    await spec.clock.advance(3_600_000);
    expect(await warnings()).toHaveLength(1);
  });
});
