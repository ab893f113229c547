import { catalogueRpc } from "@cheese/contracts";
import { serveRpc } from "@cheese/messaging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayWith, PUBLIC_URL } from "./support/gateway-in-process.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY } from "./support/system.ts";

// The customer service's authorization server behind the gateway, on one in-process bus: the
// OAuth endpoints and pages as clients reach them, through the gateway's routes (the gateway's own
// tests verify tokens against a stand-in's key).

const cheese = { id: 1, name: "Brie", status: "available" as const, organic: false };
const APP = { id: "cheese-app", redirectUri: "http://127.0.0.1:9/cb" };
const PARTNER = { id: "partner", secret: "partner-secret", redirectUri: "https://partner.example/cb" };

let system: Awaited<ReturnType<typeof gatewayWith>>;
let app: typeof system.gateway.app;
beforeAll(async () => {
  system = await gatewayWith({}, "3s", {
    clients: [
      { id: APP.id, scopes: ["read:cheeses"], redirectUris: [APP.redirectUri], plan: "pro" },
      {
        id: PARTNER.id,
        secret: PARTNER.secret,
        scopes: ["read:cheeses"],
        redirectUris: [PARTNER.redirectUri],
        plan: "enterprise",
      },
      { id: "board", scopes: ["read:cheeses"], redirectUris: ["http://127.0.0.1:9/callback"], plan: "free" },
    ],
  });
  app = system.gateway.app;
  const catalogue = system.broker.connect("catalogue");
  serveRpc(catalogue, catalogueRpc.getCheese, { queue: "catalogue" }, async () => ({ cheese, revision: 0 }));
  serveRpc(catalogue, catalogueRpc.createCheese, { queue: "catalogue" }, async () => ({
    cheese,
    revision: 0,
  }));
});
afterAll(() => system?.stop());

describe("tokens and sessions from the authorization server, taken by the gateway", () => {
  const token = async (scope?: string) => {
    const form = new URLSearchParams({ grant_type: "client_credentials", ...(scope ? { scope } : {}) });
    const response = await app.request("/oauth/token", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${OPERATOR_CLIENT.id}:${OPERATOR_CLIENT.secret}`).toString("base64")}`,
      },
      body: form.toString(),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { access_token: string; scope: string; token_type: string };
  };
  const getCheese = (headers: Record<string, string>) => app.request("/v2/cheeses/1", { headers });
  const postCheese = (headers: Record<string, string>) =>
    app.request("/v2/cheeses", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ name: "Brie" }),
    });

  it("opens an operator session for a configured key, whose token serves that session and no API route", async () => {
    const opened = await app.request("/v2/operator/sessions", {
      method: "POST",
      headers: { "x-api-key": OPERATOR_KEY },
    });
    expect(opened.status).toBe(201);
    const { token, operatorId } = (await opened.json()) as { token: string; operatorId: string };
    const bearer = { authorization: `Bearer ${token}` };
    const session = await app.request("/v2/operator/session", { headers: bearer });
    expect(await session.json()).toMatchObject({ operatorId });
    expect((await getCheese(bearer)).status).toBe(403);
  });

  it("issues client-credentials tokens with the requested scopes intersected with the client's", async () => {
    const all = await token();
    expect(all.token_type).toBe("Bearer");
    expect(all.scope.split(" ").sort()).toEqual([
      "read:cheeses",
      "read:orders",
      "write:cheeses",
      "write:orders",
    ]);
    expect((await postCheese({ authorization: `Bearer ${all.access_token}` })).status).toBe(201);

    const readOnly = await token("read:cheeses");
    expect(readOnly.scope).toBe("read:cheeses");
    expect((await getCheese({ authorization: `Bearer ${readOnly.access_token}` })).status).toBe(200);
    const forbidden = await postCheese({ authorization: `Bearer ${readOnly.access_token}` });
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toMatchObject({ code: 403, type: "forbidden" });
  });

  it("answers OAuth errors in RFC 6749 form as well as ours", async () => {
    const wrongSecret = await app.request("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: OPERATOR_CLIENT.id,
        client_secret: "nope",
      }).toString(),
    });
    expect(wrongSecret.status).toBe(401);
    expect(await wrongSecret.json()).toMatchObject({
      code: 401,
      error: "invalid_client",
      error_description: expect.any(String),
    });

    const unsupported = await app.request("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=password",
    });
    expect(unsupported.status).toBe(400);
    expect(await unsupported.json()).toMatchObject({
      code: 400,
      type: "bad_request",
      error: "unsupported_grant_type",
    });
  });

  it("publishes its signing key and metadata", async () => {
    const jwks = (await (await app.request("/.well-known/jwks.json")).json()) as {
      keys: { kid: string; kty: string; d?: string }[];
    };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: "OKP", kid: expect.any(String) });
    expect(jwks.keys[0]?.d).toBeUndefined();
    const metadata = (await (await app.request("/.well-known/oauth-authorization-server")).json()) as Record<
      string,
      unknown
    >;
    expect(metadata.token_endpoint).toBe(`${PUBLIC_URL}/oauth/token`);
  });
});

describe("the OAuth sign-in page", () => {
  it("refuses the implicit flow to a confidential client, at its redirect URI", async () => {
    const query = new URLSearchParams({
      response_type: "token",
      client_id: PARTNER.id,
      redirect_uri: PARTNER.redirectUri,
      state: "s1",
    });
    const page = await app.request(`/oauth/authorize?${query}`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(302);
    const location = new URL(page.headers.get("location")!);
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get("error")).toBe("unauthorized_client");
    expect(fragment.get("state")).toBe("s1");
    expect(fragment.get("access_token")).toBeNull();
    // The form cannot be posted around the page either.
    const form = await app.request("/oauth/authorize", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        ...Object.fromEntries(query),
        username: "customer9",
        password: "whatever-it-is",
        decision: "allow",
      }).toString(),
    });
    expect(form.status).toBe(303);
    expect(new URLSearchParams(new URL(form.headers.get("location")!).hash.slice(1)).get("error")).toBe(
      "unauthorized_client",
    );
    // A public client still may (its tokens are the customer's, on the lower plan).
    const publicClient = await app.request(
      `/oauth/authorize?${new URLSearchParams({ response_type: "token", client_id: APP.id })}`,
      { headers: { accept: "text/html" } },
    );
    expect(publicClient.status).toBe(200);
  });

  it("cannot be framed and runs no script", async () => {
    const query = new URLSearchParams({
      response_type: "code",
      client_id: "board",
      redirect_uri: "http://127.0.0.1:9/callback",
      scope: "read:cheeses",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
    });
    const response = await app.request(`/oauth/authorize?${query}`, { headers: { accept: "text/html" } });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('<form method="post" action="/oauth/authorize">');
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/(^|;\s*)frame-ancestors 'none'/);
    expect(csp).toMatch(/(^|;\s*)default-src 'none'/);
    expect(csp).not.toMatch(/script-src/);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
  });
});
