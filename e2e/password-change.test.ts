import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { login, registerAndLogin } from "./support/credentials.ts";
import { authorizationCodeTokens, type TestClient, tokenRequest } from "./support/oauth.ts";
import { type ExtraGateway, startExtraGateway } from "./support/second-gateway.ts";
import { json, OPERATOR_CLIENT, type RunningSystem, startSystem } from "./support/system.ts";

const APP: TestClient = { id: "takeover-app", redirectUri: "http://127.0.0.1:9/cb" };
const clients = [
  {
    ...OPERATOR_CLIENT,
    scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
    redirectUris: [],
    plan: "enterprise",
  },
  { id: APP.id, scopes: ["read:orders"], redirectUris: [APP.redirectUri], plan: "free" },
];

/**
 * Account takeover with a session alone is closed: changing the password or the email takes the
 * current password, and a new password ends, on every gateway within 2 s, every other session,
 * OAuth grant and API key of the customer (docs/identity.md "Changing the password").
 */
describe("changing the password", () => {
  let system: RunningSystem;
  let second: ExtraGateway;

  beforeAll(async () => {
    system = await startSystem({ env: { OAUTH_CLIENTS: JSON.stringify(clients) } });
    second = await startExtraGateway(system);
  });
  afterAll(async () => {
    await second?.stop();
    await system?.stop();
  });

  const put = (username: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${system.baseUrl}/customer/${username}`, {
      method: "PUT",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it("needs the current password to change anything, the password or the email above all; nothing changes without it", async () => {
    const eve = await registerAndLogin(system);
    const profile = { username: eve.username, email: eve.email, password: eve.password };
    const changes = [
      { ...profile, password: "attacker's new password" },
      { ...profile, email: `taken.over.${eve.username}@example.com` },
    ];
    for (const change of changes) {
      const missing = await put(eve.username, change, eve.bearer);
      expect(missing.status).toBe(422);
      expect((await json(missing)).errors).toEqual([expect.objectContaining({ field: "currentPassword" })]);
      const wrong = await put(eve.username, { ...change, currentPassword: "a guess at it" }, eve.bearer);
      expect(wrong.status).toBe(403);
      expect((await json(wrong)).message).toContain("currentPassword");
    }
    // Nothing changed: the old password logs in and the email is the old one.
    const token = await login(system, eve.username, eve.password);
    const read = await fetch(`${system.baseUrl}/customer/${eve.username}`, { headers: bearer(token) });
    expect((await json(read)).email).toBe(eve.email);
    // Other fields need it too (else the answer would tell whether `password` is the current one).
    expect((await put(eve.username, { ...profile, firstName: "Eve" }, eve.bearer)).status).toBe(422);
    const named = await put(
      eve.username,
      { ...profile, firstName: "Eve", currentPassword: eve.password },
      eve.bearer,
    );
    expect(named.status).toBe(200);
    expect((await json(named)).firstName).toBe("Eve");
  });

  it("ends every other session, OAuth grant and API key on every gateway within 2 s", async () => {
    const carol = await registerAndLogin(system);
    const otherSession = bearer(await login(system, carol.username, carol.password));
    const keyResponse = await fetch(`${system.baseUrl}/customer/${carol.username}/apiKeys`, {
      method: "POST",
      headers: carol.bearer,
    });
    const apiKey = { "x-api-key": (await json(keyResponse)).key as string };
    const oauth = await authorizationCodeTokens(system.rootUrl, APP, carol, "read:orders");
    const ownOrders = (baseUrl: string, headers: Record<string, string>) =>
      fetch(`${baseUrl}/store/orders`, { headers }).then((r) => r.status);
    const readSelf = (baseUrl: string, headers: Record<string, string>) =>
      fetch(`${baseUrl}/customer/${carol.username}`, { headers }).then((r) => r.status);
    // Everything works on the second gateway, which caches what it has seen.
    expect(await readSelf(second.baseUrl, otherSession)).toBe(200);
    expect(await readSelf(second.baseUrl, apiKey)).toBe(200);
    expect(await ownOrders(second.baseUrl, bearer(oauth.access_token))).toBe(200);

    const newPassword = "a completely new password";
    const changed = await put(
      carol.username,
      {
        username: carol.username,
        email: carol.email,
        password: newPassword,
        currentPassword: carol.password,
      },
      carol.bearer,
    );
    expect(changed.status).toBe(200);
    const changedAt = Date.now();
    await expect
      .poll(
        async () => [
          await readSelf(second.baseUrl, otherSession),
          await readSelf(second.baseUrl, apiKey),
          await ownOrders(second.baseUrl, bearer(oauth.access_token)),
        ],
        { timeout: 2000, interval: 50 },
      )
      .toEqual([401, 401, 401]);
    expect(Date.now() - changedAt).toBeLessThan(2000);
    // On the gateway that made the change too; the refresh token is spent with its grant.
    expect(await readSelf(system.baseUrl, otherSession)).toBe(401);
    const refresh = await tokenRequest(second.rootUrl, APP, {
      grant_type: "refresh_token",
      refresh_token: oauth.refresh_token,
    });
    expect(refresh.status).toBe(400);
    expect((await json(refresh)).error).toBe("invalid_grant");
    // The session that made the change goes on, and the new password gives new credentials.
    expect(await readSelf(second.baseUrl, carol.bearer)).toBe(200);
    await expect(login(system, carol.username, carol.password)).rejects.toThrow(/401/);
    const fresh = bearer(await login(system, carol.username, newPassword));
    expect(await readSelf(second.baseUrl, fresh)).toBe(200);
    const again = await authorizationCodeTokens(
      second.rootUrl,
      APP,
      { ...carol, password: newPassword },
      "read:orders",
    );
    expect(await ownOrders(system.baseUrl, bearer(again.access_token))).toBe(200);
    const keys = await fetch(`${system.baseUrl}/customer/${carol.username}/apiKeys`, { headers: fresh });
    expect(await json(keys)).toEqual([]);
  });
});
