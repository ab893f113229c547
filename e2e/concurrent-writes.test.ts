import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * Many concurrent writes to one aggregate: whoever loses every optimistic-concurrency race is
 * told 409 conflict (and may retry); nobody gets a 500, and nothing half-written is left.
 */
describe("concurrent writes to one aggregate", () => {
  let system: RunningSystem;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;

  beforeAll(async () => {
    system = await startSystem();
    operator = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  const tally = (statuses: number[]) =>
    statuses.reduce<Record<number, number>>((counts, status) => {
      counts[status] = (counts[status] ?? 0) + 1;
      return counts;
    }, {});

  it("answers 40 concurrent API-key requests of one customer with 201 or 409, never 500", async () => {
    const customer = await registerAndLogin(system);
    const url = `${system.baseUrl}/customer/${customer.username}/apiKeys`;
    const responses = await Promise.all(
      Array.from({ length: 40 }, () => fetch(url, { method: "POST", headers: customer.bearer })),
    );
    const statuses = responses.map((r) => r.status);
    expect(
      statuses.filter((s) => s !== 201 && s !== 409),
      JSON.stringify(tally(statuses)),
    ).toEqual([]);
    for (const response of responses.filter((r) => r.status === 409)) {
      expect(await json(response)).toMatchObject({ code: 409, type: "conflict" });
    }
    // Every 201 is a key that exists (at most the 25 a customer may hold), and nothing else does.
    const created = statuses.filter((s) => s === 201).length;
    expect(created).toBeGreaterThan(0);
    expect(created).toBeLessThanOrEqual(25);
    const listed = await json(await fetch(url, { headers: customer.bearer }));
    expect(listed).toHaveLength(created);
  });

  it("answers 20 concurrent renames of one cheese with 200 or 409, never 500", async () => {
    const created = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...operator.bearer },
      body: JSON.stringify({ name: `Racing Gouda ${Date.now()}` }),
    });
    const { id } = await json(created);
    const names = Array.from({ length: 20 }, (_, i) => `Racing Gouda ${Date.now()} take ${i}`);
    const responses = await Promise.all(
      names.map((name) =>
        fetch(`${system.baseUrl}/cheeses/${id}?name=${encodeURIComponent(name)}`, {
          method: "POST",
          headers: operator.bearer,
        }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(
      statuses.filter((s) => s !== 200 && s !== 409),
      JSON.stringify(tally(statuses)),
    ).toEqual([]);
    expect(statuses).toContain(200);
    // The cheese has one of the names that were answered 200.
    const renamedTo = await Promise.all(
      responses.map(async (r, i) => (r.status === 200 ? names[i] : undefined)),
    );
    const cheese = await json(await fetch(`${system.baseUrl}/cheeses/${id}`, { headers: operator.apiKey }));
    expect(renamedTo).toContain(cheese.name);
  });
});
