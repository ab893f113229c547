import { randomUUID } from "node:crypto";
import { OPERATOR_CLIENT, OPERATOR_KEY, type RunningSystem } from "./system.ts";

/** A client-credentials access token of the operator client the test systems are configured with. */
export async function operatorToken(system: RunningSystem, scope?: string): Promise<string> {
  const response = await fetch(`${system.rootUrl}/oauth/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${OPERATOR_CLIENT.id}:${OPERATOR_CLIENT.secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", ...(scope ? { scope } : {}) }).toString(),
  });
  if (response.status !== 200)
    throw new Error(`token request failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** Headers for an operator: API key (api_key operations) and a bearer token (cheesy_oauth). */
export async function operatorHeaders(
  system: RunningSystem,
): Promise<{ apiKey: Record<string, string>; bearer: Record<string, string> }> {
  return {
    apiKey: { "x-api-key": OPERATOR_KEY },
    bearer: { authorization: `Bearer ${await operatorToken(system)}` },
  };
}

export interface TestCustomer {
  id: number;
  username: string;
  email: string;
  password: string;
  /** The session token from POST /customer/login. */
  token: string;
  bearer: Record<string, string>;
}

/** A username no other test uses (3 to 32 of [A-Za-z0-9._-]). */
export function uniqueUsername(prefix = "cust"): string {
  return `${prefix}_${randomUUID().slice(0, 8)}`;
}

/** Registers a customer (POST /customer) and logs it in (POST /customer/login). */
export async function registerAndLogin(
  system: RunningSystem,
  fields: Record<string, unknown> = {},
): Promise<TestCustomer> {
  const username = (fields.username as string | undefined) ?? uniqueUsername();
  const email = (fields.email as string | undefined) ?? `${username}@example.com`;
  const password = (fields.password as string | undefined) ?? "correct horse battery";
  const created = await fetch(`${system.baseUrl}/customer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...fields, username, email, password }),
  });
  if (created.status !== 201)
    throw new Error(`customer not created: ${created.status} ${await created.text()}`);
  const { id } = (await created.json()) as { id: number };
  const token = await login(system, username, password);
  return { id, username, email, password, token, bearer: { authorization: `Bearer ${token}` } };
}

export async function login(system: RunningSystem, username: string, password: string): Promise<string> {
  const response = await fetch(`${system.baseUrl}/customer/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username, password }),
  });
  if (response.status !== 200) throw new Error(`login failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { token: string }).token;
}
