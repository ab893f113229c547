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
