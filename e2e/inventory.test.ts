import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, operatorToken } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/** GET /store/inventory: cheeses per status, from the catalogue's read model, current after every write. */
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  system = await startSystem();
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

const url = (path: string) => `${system.baseUrl}${path}`;

async function inventory(headers: Record<string, string> = auth.apiKey) {
  const response = await fetch(url("/store/inventory"), { headers });
  expect(response.status).toBe(200);
  return json(response);
}

async function write(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url(path), {
    method,
    headers: { "content-type": "application/json", ...auth.bearer, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.status, `${method} ${path}`).toBeLessThan(300);
  return response.status === 204 ? undefined : json(response);
}

describe("inventory", () => {
  it("has all three statuses, at zero, before any cheese exists", async () => {
    expect(await inventory()).toEqual({ available: 0, pending: 0, sold: 0 });
  });

  it("counts cheeses per status right after each create, status change and delete", async () => {
    const a = await write("POST", "/cheeses", { name: "Inventory A" });
    await write("POST", "/cheeses", { name: "Inventory B", status: "pending" });
    const c = await write("POST", "/cheeses", { name: "Inventory C", status: "sold" });
    await write("POST", "/cheeses", { name: "Inventory D" });
    expect(await inventory()).toEqual({ available: 2, pending: 1, sold: 1 });

    await write("POST", `/cheeses/${a.id}?status=sold`);
    expect(await inventory()).toEqual({ available: 1, pending: 1, sold: 2 });

    await write("PUT", "/cheeses", { id: c.id, name: "Inventory C", status: "pending" });
    expect(await inventory()).toEqual({ available: 1, pending: 2, sold: 1 });

    await write("DELETE", `/cheeses/${a.id}`, undefined, { "x-confirm-delete": "true" });
    expect(await inventory()).toEqual({ available: 1, pending: 2, sold: 0 });
  });

  it("is readable with an API key, a read:cheeses token, but not anonymously", async () => {
    const reader = { authorization: `Bearer ${await operatorToken(system, "read:cheeses")}` };
    expect(Object.keys(await inventory(reader)).sort()).toEqual(["available", "pending", "sold"]);
    const anonymous = await fetch(url("/store/inventory"));
    expect(anonymous.status).toBe(401);
  });
});
