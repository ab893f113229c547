import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  identityRpc,
  orderingEvents,
  PLAN_CHANGED,
  REVOCATIONS_BUCKET,
  revocationCodec,
  revocationKeys,
} from "@cheese/contracts";
import { callRpc, createInProcessBroker, KvRecords, type MessageBus } from "@cheese/messaging";
import { createLogger, type RunningService, startService } from "@cheese/service-kit";
import { createLocalJWKSet, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey } from "../src/handlers/api-keys.ts";
import { deleteCustomer } from "../src/handlers/delete-customer.ts";
import type { CustomerDeps } from "../src/handlers/deps.ts";
import { registerCustomer } from "../src/handlers/register-customer.ts";
import { customerService } from "../src/main.ts";

const context = { requestId: "test", correlationId: "test" };
const ISSUER = "https://cheese.example";
const password = "correct horse battery";
const rpc = { timeoutMs: 5_000 };
let root: string;
let service: RunningService<CustomerDeps>;
let deps: CustomerDeps;
/** A gateway's connection: it asks the RPCs and reads the revocations. */
let gateway: MessageBus;
let revocations: KvRecords<unknown>;
let counter = 0;

const register = async () => {
  counter += 1;
  const username = `identity${counter}`;
  const customer = await registerCustomer(
    deps,
    { username, email: `${username}@example.com`, password, phone: null },
    context,
  );
  return { id: customer.id, username };
};

/** The service as `main.ts` wires it, over a temporary DATA_DIR and an in-process bus. */
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "customer-identity-"));
  const broker = createInProcessBroker();
  service = await startService(customerService, {
    env: { DATA_DIR: root, LOG_LEVEL: "silent" },
    bus: broker.connect("customer"),
    logger: createLogger("customer", "silent"),
  });
  deps = { ...service.wired, cheeses: async () => undefined };
  gateway = broker.connect("gateway");
  revocations = new KvRecords(gateway, REVOCATIONS_BUCKET, revocationCodec, { readOnly: true });
});
afterAll(async () => {
  await service.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("the customer service as the issuer of tokens", () => {
  it("publishes the public half of its signing key, and signs a session with it for the issuer asked", async () => {
    const { id, username } = await register();
    const jwks = await callRpc(gateway, identityRpc.jwks, {}, rpc);
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: "OKP", alg: "EdDSA", kid: expect.any(String) });
    expect(jwks.keys[0]).not.toHaveProperty("d");

    const session = await callRpc(
      gateway,
      identityRpc.startSession,
      { username, password, issuer: ISSUER },
      rpc,
    );
    expect(session).toMatchObject({ customerId: id, username, plan: "free" });
    const { payload, protectedHeader } = await jwtVerify(session.token, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      algorithms: ["EdDSA"],
    });
    expect(protectedHeader.kid).toBe(jwks.keys[0]!.kid);
    expect(payload).toMatchObject({ sub: String(id), kind: "session", username, pwv: 0 });
    expect(new Date((payload.exp ?? 0) * 1000).toISOString()).toBe(session.expiresAt);

    await expect(
      callRpc(
        gateway,
        identityRpc.startSession,
        { username, password: "not the password", issuer: ISSUER },
        rpc,
      ),
    ).rejects.toMatchObject({ body: { status: 401, message: "invalid username or password" } });
  });
});

describe("the revocations every gateway reads", () => {
  const revoked = async (key: string) => (await revocations.get(key))?.value;

  it("holds a logged-out token until it expires, and a revoked API key", async () => {
    const until = Date.now() + 3_600_000;
    await callRpc(gateway, identityRpc.revokeToken, { jti: "logged-out", until }, rpc);
    expect(await revoked(revocationKeys.token("logged-out"))).toEqual({ until });

    const { id, username } = await register();
    const key = await createApiKey(deps, { username, asCustomer: id }, context);
    expect(await revoked(revocationKeys.apiKey(key.id))).toBeUndefined();
    await revokeApiKey(deps, { username, asCustomer: id, keyId: key.id }, context);
    expect(await revoked(revocationKeys.apiKey(key.id))).toMatchObject({ until: expect.any(Number) });
  });

  it("holds every credential of an erased customer, from its customer.deleted", async () => {
    const { id, username } = await register();
    await deleteCustomer(deps, { username, asCustomer: id, currentPassword: password }, context);
    await expect
      .poll(() => revoked(revocationKeys.customer(id)))
      .toMatchObject({ until: expect.any(Number) });
    expect(await revoked(revocationKeys.customer(id))).not.toHaveProperty("belowVersion");
  });
});

describe("plan changes", () => {
  it("tells every gateway at once when a delivered order moves a customer to another tier", async () => {
    const { id } = await register();
    const heard: unknown[] = [];
    const listening = gateway.onBroadcast(PLAN_CHANGED, (payload) => heard.push(payload));
    const at = new Date().toISOString();
    const delivered = (orderId: number, total: number) =>
      gateway.publish({
        id: randomUUID(),
        subject: orderingEvents.orderDelivered.subject,
        payload: {
          order: {
            id: orderId,
            items: [{ cheeseId: 1, cheeseName: "Brie", quantity: 1, pricePerKg: total }],
            shippingAddress: { street: "[erased]", city: "[erased]", country: "FR" },
            status: "delivered",
            notes: null,
            total,
            shipDate: at,
            createdAt: at,
            updatedAt: at,
          },
          customerId: id,
        },
      });
    const counted = async () =>
      (await deps.store.readStream(`customer-${id}`)).filter(
        (event) => event.type === "DeliveredOrderCounted",
      ).length;
    // $40 stays bronze: nothing to tell.
    await delivered(9001, 40);
    await expect.poll(counted).toBe(1);
    expect(heard).toEqual([]);
    // $40 + $80 crosses $100: silver.
    await delivered(9002, 80);
    await expect.poll(() => heard).toEqual([{ customerId: id }]);
    await listening.close();
  });
});
