import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { json, type RunningSystem } from "./system.ts";

/** Helpers for the ordering e2e tests: HTTP calls with JSON bodies, cheeses, orders, polling. */

export type Headers = Record<string, string>;

export const address = { street: "12 Curd Lane", city: "Wells", zipCode: "BA5 2PB", country: "GB" };

export function http(system: RunningSystem) {
  const call = (method: string, path: string, headers: Headers = {}, body?: unknown) =>
    fetch(`${system.baseUrl}${path}`, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
  return {
    get: (path: string, headers?: Headers) => call("GET", path, headers),
    post: (path: string, body: unknown, headers?: Headers) => call("POST", path, headers, body ?? {}),
    delete: (path: string, headers?: Headers, body?: unknown) => call("DELETE", path, headers, body),
  };
}

/** A cheese with a unique name; `pricePerKg: undefined` makes one without a price. */
export async function createCheese(
  system: RunningSystem,
  bearer: Headers,
  fields: Record<string, unknown> = {},
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
): Promise<any> {
  const body = { name: `Cheese ${randomUUID()}`, pricePerKg: 20, ...fields };
  const response = await http(system).post("/cheeses", body, bearer);
  if (response.status !== 201)
    throw new Error(`cheese not created: ${response.status} ${await response.text()}`);
  return json(response);
}

export function orderBody(
  lines: { cheeseId: number; quantity: number }[],
  extra: Record<string, unknown> = {},
) {
  return { items: lines, shippingAddress: address, ...extra };
}

/** Polls GET /store/order/{id} until the status is reached; a 503 while a service restarts is waited out. */
export async function waitForStatus(
  system: RunningSystem,
  orderId: number,
  status: string,
  headers: Headers,
  timeoutMs = 20_000,
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
): Promise<any> {
  const read = async () => {
    const response = await http(system).get(`/store/order/${orderId}`, headers);
    return response.status === 200 ? json(response) : { status: `HTTP ${response.status}` };
  };
  await expect
    .poll(async () => (await read()).status, { timeout: timeoutMs, message: `order ${orderId}` })
    .toBe(status);
  return read();
}

/** Registers a customer and logs in; the bearer header carries read:orders and write:orders. */
export async function registerCustomer(system: RunningSystem) {
  const username = `buyer_${randomUUID().slice(0, 8)}`;
  const password = "correct horse battery";
  const api = http(system);
  const created = await api.post("/customer", { username, email: `${username}@example.com`, password });
  if (created.status !== 201)
    throw new Error(`customer not created: ${created.status} ${await created.text()}`);
  const customer = await json(created);
  const login = await api.post("/customer/login", { username, password });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${await login.text()}`);
  const { token } = await json(login);
  return { id: customer.id as number, username, password, bearer: { authorization: `Bearer ${token}` } };
}
