import { apiKeyHash, catalogueRpc, customerRpc } from "@cheese/contracts";
import { createInProcessBroker, RemoteError, serveRpc } from "@cheese/messaging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import { OPERATOR_CLIENT, testGateway } from "./support.ts";

const cheese = { id: 1, name: "Brie", status: "available" as const, organic: false };
const APP = { id: "cheese-app", redirectUri: "http://127.0.0.1:9/cb" };

/** Two keys of customer 7; customers 7, 8 and 9 are free (bronze). */
const keys: Record<string, number> = { chs_first_key_of_seven: 71, chs_second_key_of_seven: 72 };

/**
 * Whose bucket a request spends, with the spec's plans (free: bursts of 10): a customer's keys
 * and sessions share the customer's; a customer's OAuth tokens for a client have a bucket per
 * (client, customer) on the lower plan; client-credentials tokens keep the client's.
 */
describe("rate-limit buckets of customers and OAuth clients", () => {
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  beforeAll(async () => {
    const broker = createInProcessBroker();
    const services = broker.connect("services");
    serveRpc(services, catalogueRpc.getCheese, { queue: "catalogue" }, async () => ({ cheese, revision: 0 }));
    const principal = (customerId: number) => ({
      customerId,
      username: `customer${customerId}`,
      customerStatus: "bronze" as const,
      plan: "free" as const,
      passwordVersion: 0,
    });
    serveRpc(services, customerRpc.principal, { queue: "customer" }, async ({ customerId }) =>
      principal(customerId),
    );
    // Knows a key by its apiKeyHash, as the customer service stores it: a gateway that asked by
    // anything else would find no key and answer 401.
    serveRpc(services, customerRpc.authenticateApiKey, { queue: "customer" }, async ({ keyHash }) => {
      const entry = Object.entries(keys).find(([key]) => apiKeyHash(key) === keyHash);
      if (!entry) throw new RemoteError({ status: 401, type: "unauthorized", message: "unknown API key" });
      return {
        ...principal(7),
        keyId: entry[1],
        createdAt: new Date().toISOString(),
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      };
    });
    gateway = await testGateway(broker.connect("gateway"), 1000, {
      rateLimits: specPlanLimits,
      clients: [{ id: APP.id, scopes: ["read:cheeses"], redirectUris: [APP.redirectUri], plan: "pro" }],
    });
  });
  afterAll(() => gateway.cleanup());

  const read = (headers: Record<string, string>) => gateway.app.request("/v2/cheeses/1", { headers });
  const session = async (customerId: number) => {
    const { token } = await gateway.tokens.issue(
      {
        kind: "session",
        sub: String(customerId),
        username: `customer${customerId}`,
        scopes: ["read:cheeses"],
      },
      3600,
    );
    return { authorization: `Bearer ${token}` };
  };
  const granted = async (customerId: number, clientId: string) => {
    const { token } = await gateway.tokens.issue(
      { kind: "user", sub: String(customerId), clientId, scopes: ["read:cheeses"] },
      3600,
    );
    return { authorization: `Bearer ${token}` };
  };
  const statuses = async (count: number, headers: () => Record<string, string>) => {
    const seen: number[] = [];
    for (let i = 0; i < count; i++) seen.push((await read(headers())).status);
    return seen;
  };

  it("counts a customer's API keys and sessions in one bucket: more keys are not more requests", async () => {
    const credentials = [
      { "x-api-key": "chs_first_key_of_seven" },
      { "x-api-key": "chs_second_key_of_seven" },
      await session(7),
    ];
    let i = 0;
    const seen = await statuses(14, () => credentials[i++ % credentials.length]!);
    expect(seen.filter((s) => s === 200)).toHaveLength(10);
    expect(seen.slice(10)).toEqual([429, 429, 429, 429]);
    // Another customer's bucket is untouched.
    expect((await read(await session(8))).status).toBe(200);
  });

  it("limits a customer's token for a client per (client, customer) on the lower plan", async () => {
    const first = await read(await granted(9, APP.id));
    expect(first.status).toBe(200);
    // The client is pro, the customer free: the token runs on free.
    expect(first.headers.get("ratelimit-limit")).toBe("10");
    const nine = await granted(9, APP.id);
    expect(await statuses(10, () => nine)).toEqual([...Array(9).fill(200), 429]);
    // Customer 8 has a bucket of its own with the same client, as has customer 9 with another.
    const eight = await read(await granted(8, APP.id));
    expect(eight.status).toBe(200);
    expect(eight.headers.get("ratelimit-remaining")).toBe("9");
    expect((await read(await granted(9, OPERATOR_CLIENT.id))).status).toBe(200);
    // The operator client's own tokens (client credentials) keep its enterprise bucket.
    const operator = await gateway.tokens.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["read:cheeses"] },
      3600,
    );
    const own = await read({ authorization: `Bearer ${operator.token}` });
    expect(own.status).toBe(200);
    expect(own.headers.get("ratelimit-limit")).toBe("1000");
  });
});
