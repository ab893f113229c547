import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * docs/operations.md "Running it": two `pnpm start` runs with different GATEWAY_PORT and DATA_DIR
 * work at once on one machine; each starts its own nats-server on a free port.
 */
describe("two systems side by side", () => {
  let first: RunningSystem;
  let second: RunningSystem;
  beforeAll(async () => {
    [first, second] = await Promise.all([startSystem(), startSystem()]);
  });
  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
  });

  it("run on their own gateway ports, nats-servers and data directories", () => {
    expect(first.rootUrl).not.toBe(second.rootUrl);
    expect(first.dataDir).not.toBe(second.dataDir);
    expect(first.natsUrl()).not.toBe(second.natsUrl());
  });

  it("keep their data apart", async () => {
    const create = async (system: RunningSystem, name: string) => {
      const auth = await operatorHeaders(system);
      const response = await fetch(`${system.baseUrl}/cheeses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth.bearer },
        body: JSON.stringify({ name }),
      });
      expect(response.status).toBe(201);
      return { auth, cheese: await json(response) };
    };
    const a = await create(first, "Only in the first");
    const b = await create(second, "Only in the second");
    const names = async (system: RunningSystem, headers: Record<string, string>) =>
      (await json(await fetch(`${system.baseUrl}/cheeses?limit=100`, { headers }))).items.map(
        (c: { name: string }) => c.name,
      );
    expect(await names(first, a.auth.apiKey)).toEqual(["Only in the first"]);
    expect(await names(second, b.auth.apiKey)).toEqual(["Only in the second"]);
  });
});
