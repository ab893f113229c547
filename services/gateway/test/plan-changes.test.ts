import {
  type CustomerStatus,
  catalogueRpc,
  customerRpc,
  PLAN_CHANGED,
  planForStatus,
} from "@cheese/contracts";
import { createInProcessBroker, serveRpc } from "@cheese/messaging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import { testGateway } from "./support.ts";

const cheese = { id: 1, name: "Brie", status: "available" as const, organic: false };

/**
 * A tier change reaches every replica's plan cache within 2 s, driven by the customer service's
 * broadcast, not by the cache running out (30 s).
 */
describe("plan changes", () => {
  const broker = createInProcessBroker();
  let status: CustomerStatus = "bronze";
  let replicas: Awaited<ReturnType<typeof testGateway>>[] = [];

  beforeAll(async () => {
    const services = broker.connect("services");
    serveRpc(services, catalogueRpc.getCheese, { queue: "catalogue" }, async () => ({ cheese, revision: 0 }));
    serveRpc(services, customerRpc.principal, { queue: "customer" }, async ({ customerId }) => ({
      customerId,
      username: "goldie",
      customerStatus: status,
      plan: planForStatus(status),
      passwordVersion: 0,
    }));
    replicas = await Promise.all(
      ["gateway-1", "gateway-2"].map((name) =>
        testGateway(broker.connect(name), 1000, { rateLimits: specPlanLimits }),
      ),
    );
  });
  afterAll(() => Promise.all(replicas.map((replica) => replica.cleanup())));

  it("gives every gateway the new plan as soon as the customer's status changes", async () => {
    const sessions = await Promise.all(
      replicas.map(async (replica) => {
        const { token } = await replica.tokens.issue(
          { kind: "session", sub: "42", username: "goldie", scopes: ["read:cheeses"], passwordVersion: 0 },
          3600,
        );
        return { authorization: `Bearer ${token}` };
      }),
    );
    const limits = () =>
      Promise.all(
        replicas.map(async (replica, i) => {
          const response = await replica.app.request("/v2/cheeses/1", { headers: sessions[i]! });
          return response.headers.get("x-rate-limit");
        }),
      );
    // Both replicas now hold the free plan in their caches.
    expect(await limits()).toEqual(["100", "100"]);

    status = "gold";
    // As the customer service broadcasts a status change (handlers/tiers.ts).
    await broker.connect("customer").broadcast(PLAN_CHANGED, { customerId: 42 });
    await expect.poll(limits, { timeout: 2000, interval: 50 }).toEqual(["10000", "10000"]);
  });
});
