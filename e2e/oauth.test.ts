import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { authorizationCodeTokens, formPost, revokeRequest, tokenRequest } from "./support/oauth.ts";
import { json, OPERATOR_CLIENT, type RunningSystem, startSystem } from "./support/system.ts";

/** What a browser sends when it navigates. */
const browser = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };

const SPA = { id: "cheese-spa", redirectUri: "http://127.0.0.1:9/callback" };
const WEB = { id: "cheese-web", secret: "web-secret-123", redirectUri: "https://web.example/oauth/cb" };
const clients = [
  {
    ...OPERATOR_CLIENT,
    scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
    redirectUris: [],
    plan: "enterprise",
  },
  {
    id: SPA.id,
    scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
    redirectUris: [SPA.redirectUri, "http://127.0.0.1:9/other"],
    plan: "free",
  },
  {
    id: WEB.id,
    secret: WEB.secret,
    scopes: ["read:cheeses", "read:orders"],
    redirectUris: [WEB.redirectUri],
    plan: "pro",
  },
];

/**
 * The authorization server over HTTP, as a browser and a client would use it: the sign-in and
 * consent page, the form post, the redirect, and the token endpoint's grants. That a code
 * expires after OAUTH_CODE_TTL is shown on a manual clock in services/customer/test/oauth-grants.test.ts.
 */
describe("OAuth 2.0 authorization server", () => {
  let system: RunningSystem;
  let alice: TestCustomer;
  let cheeseId: number;

  beforeAll(async () => {
    system = await startSystem({ env: { OAUTH_CLIENTS: JSON.stringify(clients) } });
    alice = await registerAndLogin(system);
    const operator = await clientCredentials(OPERATOR_CLIENT.id, OPERATOR_CLIENT.secret);
    const created = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${operator.access_token}` },
      body: JSON.stringify({ name: "OAuth Cheddar" }),
    });
    cheeseId = (await json(created)).id;
  });
  afterAll(async () => {
    await system?.stop();
  });

  const pkce = () => {
    const verifier = randomBytes(32).toString("base64url");
    return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
  };
  const authorizeUrl = (params: Record<string, string>) =>
    `${system.rootUrl}/oauth/authorize?${new URLSearchParams(params).toString()}`;
  const form = formPost;
  const token = (body: Record<string, string>, headers: Record<string, string> = {}) =>
    form(`${system.rootUrl}/oauth/token`, body, headers);
  async function clientCredentials(id: string, secret: string) {
    const response = await token({ grant_type: "client_credentials", client_id: id, client_secret: secret });
    expect(response.status).toBe(200);
    return json(response);
  }

  /** GETs the page, reads its form, and posts it back with the customer's credentials. */
  async function signIn(
    params: Record<string, string>,
    credentials = { username: alice.username, password: alice.password },
    decision = "allow",
  ) {
    const page = await fetch(authorizeUrl(params), { redirect: "manual", headers: browser });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
    expect(action).toBe("/oauth/authorize");
    const hidden = Object.fromEntries(
      [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
        m[1]!,
        unescapeHtml(m[2]!),
      ]),
    );
    return {
      html,
      response: await form(`${system.rootUrl}${action}`, { ...hidden, ...credentials, decision }, browser),
    };
  }

  const codeRequest = (challenge: string, extra: Record<string, string> = {}) => ({
    response_type: "code",
    client_id: SPA.id,
    redirect_uri: SPA.redirectUri,
    scope: "read:cheeses write:orders write:cheeses",
    state: "state-123",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...extra,
  });

  async function authorizationCode(challenge: string, extra: Record<string, string> = {}) {
    const { response } = await signIn(codeRequest(challenge, extra));
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location")!);
    return location.searchParams.get("code")!;
  }

  it("runs the authorization-code flow with PKCE: page, form, redirect, exchange, use", async () => {
    const { verifier, challenge } = pkce();
    const { html, response } = await signIn(codeRequest(challenge));
    // The consent page names the client and what the customer may grant it: not write:cheeses.
    expect(html).toContain(SPA.id);
    expect(html).toContain("read:cheeses");
    expect(html).toContain("write:orders");
    expect(html).not.toContain("write:cheeses");
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(SPA.redirectUri);
    expect(location.searchParams.get("state")).toBe("state-123");
    const code = location.searchParams.get("code")!;
    expect(code).toMatch(/^[\w-]{20,}$/);

    const exchanged = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: SPA.redirectUri,
      client_id: SPA.id,
      code_verifier: verifier,
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get("cache-control")).toBe("no-store");
    const tokens = await json(exchanged);
    expect(tokens).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 3600,
      scope: "read:cheeses write:orders",
      refresh_token: expect.any(String),
    });
    const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url").toString());
    expect(claims).toMatchObject({ sub: String(alice.id), username: alice.username, client_id: SPA.id });

    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    expect((await fetch(`${system.baseUrl}/cheeses/${cheeseId}`, { headers: bearer })).status).toBe(200);
    const write = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer },
      body: JSON.stringify({ name: "Not granted" }),
    });
    expect(write.status).toBe(403);

    // A code works once.
    const again = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: SPA.redirectUri,
      client_id: SPA.id,
      code_verifier: verifier,
    });
    expect(again.status).toBe(400);
    expect(await json(again)).toMatchObject({ code: 400, type: "bad_request", error: "invalid_grant" });
  });

  it("refuses the exchange without the right verifier, redirect URI or client", async () => {
    const exchange = async (overrides: Record<string, string>) => {
      const { verifier, challenge } = pkce();
      const code = await authorizationCode(challenge);
      const body = {
        grant_type: "authorization_code",
        code,
        redirect_uri: SPA.redirectUri,
        client_id: SPA.id,
        code_verifier: verifier,
        ...overrides,
      };
      return token(body);
    };
    const mismatches: Record<string, string>[] = [
      { code_verifier: randomBytes(32).toString("base64url") },
      { redirect_uri: "http://127.0.0.1:9/other" },
    ];
    for (const overrides of mismatches) {
      const response = await exchange(overrides);
      expect(response.status).toBe(400);
      expect((await json(response)).error).toBe("invalid_grant");
    }
    const noVerifier = await exchange({ code_verifier: "" });
    expect((await json(noVerifier)).error).toBe("invalid_request");
    const otherClient = await exchange({ client_id: WEB.id, client_secret: WEB.secret });
    expect((await json(otherClient)).error).toBe("invalid_grant");
  });

  it("revokes every token a code gave when the code comes back (RFC 6749 §4.1.2)", async () => {
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(challenge);
    const body = {
      grant_type: "authorization_code",
      code,
      redirect_uri: SPA.redirectUri,
      client_id: SPA.id,
      code_verifier: verifier,
    };
    const first = await token(body);
    expect(first.status).toBe(200);
    const tokens = await json(first);
    const read = () =>
      fetch(`${system.baseUrl}/cheeses/${cheeseId}`, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
    expect((await read()).status).toBe(200);
    const replay = await token(body);
    expect(replay.status).toBe(400);
    expect(await json(replay)).toMatchObject({ error: "invalid_grant" });
    await expect.poll(async () => (await read()).status, { timeout: 5_000 }).toBe(401);
    const refreshed = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: SPA.id,
    });
    expect(await json(refreshed)).toMatchObject({ error: "invalid_grant" });
  });

  it("spends the code when the exchange leaves out code_verifier", async () => {
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(challenge);
    const body = { grant_type: "authorization_code", code, redirect_uri: SPA.redirectUri, client_id: SPA.id };
    const without = await token(body);
    expect(await json(without)).toMatchObject({ error: "invalid_request" });
    const late = await token({ ...body, code_verifier: verifier });
    expect(late.status).toBe(400);
    expect(await json(late)).toMatchObject({ error: "invalid_grant" });
  });

  it("refuses a parameter given twice (RFC 6749 §3.1) at the token, revoke and authorization endpoints", async () => {
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(challenge);
    const twice = (pairs: [string, string][]) =>
      fetch(`${system.rootUrl}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(pairs).toString(),
      });
    const exchange: [string, string][] = [
      ["grant_type", "authorization_code"],
      ["code", code],
      ["redirect_uri", SPA.redirectUri],
      ["client_id", SPA.id],
      ["code_verifier", verifier],
    ];
    const doubled = await twice([...exchange, ["code_verifier", "x".repeat(43)]]);
    expect(doubled.status).toBe(400);
    expect(await json(doubled)).toMatchObject({ error: "invalid_request" });
    const credentials = await twice([
      ["grant_type", "client_credentials"],
      ["client_id", OPERATOR_CLIENT.id],
      ["client_secret", OPERATOR_CLIENT.secret],
      ["scope", "read:cheeses"],
      ["scope", "write:cheeses"],
    ]);
    expect(await json(credentials)).toMatchObject({ error: "invalid_request" });
    const revoke = await fetch(`${system.rootUrl}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `client_id=${SPA.id}&token=a&token=b`,
    });
    expect(await json(revoke)).toMatchObject({ error: "invalid_request" });
    // The authorization request: a second scope goes back to the client; a second client_id is shown.
    const request = new URLSearchParams(codeRequest(challenge));
    request.append("scope", "read:orders");
    const scopes = await fetch(`${system.rootUrl}/oauth/authorize?${request}`, {
      redirect: "manual",
      headers: browser,
    });
    expect(scopes.status).toBe(302);
    expect(new URL(scopes.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
    request.append("client_id", WEB.id);
    const clientsTwice = await fetch(`${system.rootUrl}/oauth/authorize?${request}`, {
      redirect: "manual",
      headers: browser,
    });
    expect(clientsTwice.status).toBe(400);
    expect(clientsTwice.headers.get("location")).toBeNull();
  });

  it("rotates refresh tokens: a refresh answers new ones, narrows scopes, and a refused one spends nothing", async () => {
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(challenge);
    const first = await json(
      await token({
        grant_type: "authorization_code",
        code,
        redirect_uri: SPA.redirectUri,
        client_id: SPA.id,
        code_verifier: verifier,
      }),
    );
    const refreshed = await token({
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      client_id: SPA.id,
    });
    expect(refreshed.status).toBe(200);
    const second = await json(refreshed);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.scope).toBe("read:cheeses write:orders");
    const bearer = { authorization: `Bearer ${second.access_token}` };
    expect((await fetch(`${system.baseUrl}/cheeses/${cheeseId}`, { headers: bearer })).status).toBe(200);
    // (Using the first one again would end the whole grant: see "grants" below.)
    // A refused refresh (asking for more than was granted) does not spend the token.
    const widened = await token({
      grant_type: "refresh_token",
      refresh_token: second.refresh_token,
      client_id: SPA.id,
      scope: "read:cheeses write:cheeses",
    });
    expect(widened.status).toBe(400);
    expect((await json(widened)).error).toBe("invalid_scope");
    const narrowed = await json(
      await token({
        grant_type: "refresh_token",
        refresh_token: second.refresh_token,
        client_id: SPA.id,
        scope: "read:cheeses",
      }),
    );
    expect(narrowed.scope).toBe("read:cheeses");
  });

  describe("grants: the family of tokens from one sign-in", () => {
    const readCheese = (accessToken: string) =>
      fetch(`${system.baseUrl}/cheeses/${cheeseId}`, {
        headers: { authorization: `Bearer ${accessToken}` },
      }).then((r) => r.status);
    const refresh = (refreshToken: string) =>
      tokenRequest(system.rootUrl, SPA, { grant_type: "refresh_token", refresh_token: refreshToken });
    const grants = (customer: TestCustomer, username = customer.username) =>
      fetch(`${system.baseUrl}/customer/${username}/grants`, { headers: customer.bearer });

    it("ends the whole grant when a spent refresh token comes back (RFC 9700 §4.14.2)", async () => {
      const first = await authorizationCodeTokens(system.rootUrl, SPA, alice, "read:cheeses");
      const second = await json(await refresh(first.refresh_token));
      expect(await readCheese(second.access_token)).toBe(200);
      // Someone replays the first refresh token: refused, and the family with it.
      const replayed = await refresh(first.refresh_token);
      expect(replayed.status).toBe(400);
      expect(await json(replayed)).toMatchObject({ error: "invalid_grant" });
      await expect.poll(() => readCheese(second.access_token), { timeout: 1000 }).toBe(401);
      const latest = await refresh(second.refresh_token);
      expect(latest.status).toBe(400);
      expect((await json(latest)).error).toBe("invalid_grant");
    });

    it("lets a customer list its grants and revoke one, ending its tokens; others' are 403", async () => {
      const carol = await registerAndLogin(system);
      const kept = await authorizationCodeTokens(system.rootUrl, SPA, carol, "read:cheeses");
      const ended = await authorizationCodeTokens(system.rootUrl, WEB, carol, "read:cheeses read:orders");
      const listed = await grants(carol);
      expect(listed.status).toBe(200);
      const list = await json(listed);
      expect(list).toEqual([
        expect.objectContaining({ clientId: SPA.id, scopes: ["read:cheeses"] }),
        expect.objectContaining({ clientId: WEB.id, scopes: ["read:cheeses", "read:orders"] }),
      ]);
      for (const grant of list) {
        expect(Date.parse(grant.expiresAt) - Date.parse(grant.lastUsedAt)).toBe(30 * 24 * 3_600_000);
      }
      // Only carol sees or revokes carol's grants.
      expect((await grants(alice, carol.username)).status).toBe(403);
      const byAlice = await fetch(`${system.baseUrl}/customer/${carol.username}/grants/${list[1].id}`, {
        method: "DELETE",
        headers: alice.bearer,
      });
      expect(byAlice.status).toBe(403);

      const revoke = (id: string) =>
        fetch(`${system.baseUrl}/customer/${carol.username}/grants/${id}`, {
          method: "DELETE",
          headers: carol.bearer,
        });
      expect((await revoke(list[1].id)).status).toBe(204);
      await expect.poll(() => readCheese(ended.access_token), { timeout: 1000 }).toBe(401);
      const refused = await tokenRequest(system.rootUrl, WEB, {
        grant_type: "refresh_token",
        refresh_token: ended.refresh_token,
      });
      expect((await json(refused)).error).toBe("invalid_grant");
      expect((await revoke(list[1].id)).status).toBe(404);
      // The other grant is untouched.
      expect(await readCheese(kept.access_token)).toBe(200);
      expect(await json(await grants(carol))).toEqual([expect.objectContaining({ id: list[0].id })]);
    });

    it("revokes tokens at /oauth/revoke (RFC 7009): a refresh token ends its grant", async () => {
      const dave = await registerAndLogin(system);
      const viaRefresh = await authorizationCodeTokens(system.rootUrl, SPA, dave, "read:cheeses");
      const revoked = await revokeRequest(system.rootUrl, SPA, {
        token: viaRefresh.refresh_token,
        token_type_hint: "refresh_token",
      });
      expect(revoked.status).toBe(200);
      await expect.poll(() => readCheese(viaRefresh.access_token), { timeout: 1000 }).toBe(401);
      expect((await refresh(viaRefresh.refresh_token)).status).toBe(400);
      expect(await json(await grants(dave))).toEqual([]);

      // An access token ends itself; its grant's refresh token goes on.
      const viaAccess = await authorizationCodeTokens(system.rootUrl, SPA, dave, "read:cheeses");
      expect((await revokeRequest(system.rootUrl, SPA, { token: viaAccess.access_token })).status).toBe(200);
      await expect.poll(() => readCheese(viaAccess.access_token), { timeout: 1000 }).toBe(401);
      expect((await refresh(viaAccess.refresh_token)).status).toBe(200);

      // Another client's token is left alone, unknown tokens are no error, and a confidential
      // client must authenticate.
      const webTokens = await authorizationCodeTokens(system.rootUrl, WEB, dave, "read:cheeses");
      expect((await revokeRequest(system.rootUrl, SPA, { token: webTokens.refresh_token })).status).toBe(200);
      expect((await revokeRequest(system.rootUrl, SPA, { token: webTokens.access_token })).status).toBe(200);
      expect(await readCheese(webTokens.access_token)).toBe(200);
      expect((await revokeRequest(system.rootUrl, SPA, { token: "no-such-token" })).status).toBe(200);
      const anonymous = await revokeRequest(
        system.rootUrl,
        { ...WEB, secret: "wrong" },
        {
          token: webTokens.refresh_token,
        },
      );
      expect(anonymous.status).toBe(401);
      expect((await json(anonymous)).error).toBe("invalid_client");
      expect(await readCheese(webTokens.access_token)).toBe(200);
    });
  });

  it("runs the implicit flow: the token comes back in the fragment", async () => {
    const { response } = await signIn({
      response_type: "token",
      client_id: SPA.id,
      redirect_uri: SPA.redirectUri,
      scope: "read:orders",
      state: "imp",
    });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location")!);
    expect(location.search).toBe("");
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get("token_type")).toBe("Bearer");
    expect(fragment.get("expires_in")).toBe("3600");
    expect(fragment.get("scope")).toBe("read:orders");
    expect(fragment.get("state")).toBe("imp");
    const cheese = await fetch(`${system.baseUrl}/cheeses/${cheeseId}`, {
      headers: { authorization: `Bearer ${fragment.get("access_token")}` },
    });
    // read:orders does not read cheeses.
    expect(cheese.status).toBe(403);
  });

  it("authenticates confidential clients at the token endpoint", async () => {
    const { verifier, challenge } = pkce();
    const page = await signIn({
      response_type: "code",
      client_id: WEB.id,
      redirect_uri: WEB.redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
    });
    const code = new URL(page.response.headers.get("location")!).searchParams.get("code")!;
    const body = {
      grant_type: "authorization_code",
      code,
      redirect_uri: WEB.redirectUri,
      code_verifier: verifier,
    };
    const unauthenticated = await token({ ...body, client_id: WEB.id });
    expect(unauthenticated.status).toBe(401);
    expect(await json(unauthenticated)).toMatchObject({ code: 401, error: "invalid_client" });
    const basic = { authorization: `Basic ${Buffer.from(`${WEB.id}:${WEB.secret}`).toString("base64")}` };
    // The failed attempt did not spend the code: the client never proved who it was.
    const exchanged = await token(body, basic);
    expect(exchanged.status).toBe(200);
    expect((await json(exchanged)).scope).toBe("read:cheeses read:orders");
    // client_credentials is for confidential clients only.
    const publicClient = await token({ grant_type: "client_credentials", client_id: SPA.id });
    expect(publicClient.status).toBe(401);
  });

  it("never redirects to an unregistered URI, and reports other problems to the client", async () => {
    const { challenge } = pkce();
    const evil = authorizeUrl(codeRequest(challenge, { redirect_uri: "https://evil.example/cb" }));
    const foreign = await fetch(evil, { redirect: "manual", headers: browser });
    expect(foreign.status).toBe(400);
    expect(foreign.headers.get("location")).toBeNull();
    expect(foreign.headers.get("content-type")).toContain("text/html");
    expect(await foreign.text()).toContain("redirect_uri");
    // An API client gets the API's error body instead of a page.
    const asApi = await fetch(evil, { redirect: "manual" });
    expect(asApi.status).toBe(400);
    expect(await json(asApi)).toMatchObject({ code: 400, type: "bad_request", error: "invalid_request" });
    const prefix = await fetch(
      authorizeUrl(codeRequest(challenge, { redirect_uri: `${SPA.redirectUri}/x` })),
      {
        redirect: "manual",
      },
    );
    expect(prefix.status).toBe(400);
    const unknownClient = await fetch(authorizeUrl(codeRequest(challenge, { client_id: "nobody" })), {
      redirect: "manual",
    });
    expect(unknownClient.status).toBe(400);

    const withoutPkce = await fetch(
      authorizeUrl({ response_type: "code", client_id: SPA.id, redirect_uri: SPA.redirectUri, state: "s1" }),
      { redirect: "manual" },
    );
    expect(withoutPkce.status).toBe(302);
    const location = new URL(withoutPkce.headers.get("location")!);
    expect(location.searchParams.get("error")).toBe("invalid_request");
    expect(location.searchParams.get("state")).toBe("s1");
    const badType = await fetch(
      authorizeUrl({ response_type: "id_token", client_id: SPA.id, redirect_uri: SPA.redirectUri }),
      { redirect: "manual" },
    );
    expect(new URL(badType.headers.get("location")!).searchParams.get("error")).toBe(
      "unsupported_response_type",
    );
  });

  it("shows the page again on a wrong password, and sends access_denied when the customer says no", async () => {
    const { challenge } = pkce();
    const wrong = await signIn(codeRequest(challenge), {
      username: alice.username,
      password: "wrong password",
    });
    expect(wrong.response.status).toBe(401);
    expect(wrong.response.headers.get("location")).toBeNull();
    expect(await wrong.response.text()).toContain("Invalid username or password");
    const denied = await signIn(codeRequest(challenge), { username: "", password: "" }, "deny");
    expect(denied.response.status).toBe(303);
    const location = new URL(denied.response.headers.get("location")!);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("state-123");
    expect(location.searchParams.get("code")).toBeNull();
  });

  it("publishes its metadata and keys, and documents every OAuth operation", async () => {
    const metadata = await json(await fetch(`${system.rootUrl}/.well-known/oauth-authorization-server`));
    expect(metadata).toMatchObject({
      authorization_endpoint: expect.stringMatching(/\/oauth\/authorize$/),
      token_endpoint: expect.stringMatching(/\/oauth\/token$/),
      code_challenge_methods_supported: ["S256"],
      response_types_supported: ["code", "token"],
    });
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining(["authorization_code", "client_credentials", "refresh_token"]),
    );
    const doc = await json(await fetch(`${system.baseUrl}/openapi.json`));
    expect(metadata.revocation_endpoint).toMatch(/\/oauth\/revoke$/);
    for (const path of ["/oauth/authorize", "/oauth/token", "/oauth/revoke", "/.well-known/jwks.json"]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths["/oauth/token"].post.requestBody.content).toHaveProperty(
      "application/x-www-form-urlencoded",
    );
    expect(doc.paths["/oauth/authorize"].get.servers).toEqual([expect.objectContaining({ url: "/" })]);
  });
});

function unescapeHtml(value: string): string {
  return value
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}
