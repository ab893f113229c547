import { generateKeyPairSync } from "node:crypto";
import { apiKeyHash, catalogueRpc, identityRpc } from "@cheese/contracts";
import { createInProcessBroker, serveRpc } from "@cheese/messaging";
import { ManualClock } from "@cheese/service-kit/testing";
import { TokenSigner } from "@cheese/service-testing/stand-ins";
import { SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenVerifier } from "../src/auth/tokens.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY, testGateway } from "./support.ts";

const cheese = { id: 1, name: "Brie", status: "available" as const, organic: false };

describe("authentication and access at the gateway", () => {
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  beforeAll(async () => {
    const broker = createInProcessBroker();
    const catalogue = broker.connect("catalogue");
    serveRpc(catalogue, catalogueRpc.getCheese, { queue: "catalogue" }, async () => ({
      cheese,
      revision: 0,
    }));
    serveRpc(catalogue, catalogueRpc.createCheese, { queue: "catalogue" }, async () => ({
      cheese,
      revision: 0,
    }));
    gateway = await testGateway(broker.connect("gateway"));
  });
  afterAll(() => gateway.cleanup());

  const getCheese = (headers: Record<string, string>) => gateway.app.request("/v2/cheeses/1", { headers });
  const postCheese = (headers: Record<string, string>) =>
    gateway.app.request("/v2/cheeses", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ name: "Brie" }),
    });

  it("answers 401 with WWW-Authenticate and the error body when credentials are missing", async () => {
    const response = await getCheese({});
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain("Bearer");
    expect(await response.json()).toMatchObject({ code: 401, type: "unauthorized" });
  });

  it("accepts an operator API key where api_key is allowed, and refuses an unknown key with 401", async () => {
    expect((await getCheese({ "x-api-key": OPERATOR_KEY })).status).toBe(200);
    const unknown = await getCheese({ "x-api-key": "guess" });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("takes an operator session token only for its session, and refuses it once its key is no longer configured", async () => {
    const operatorId = `op:${apiKeyHash(OPERATOR_KEY).slice(0, 12)}`;
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
    const session = (t: string) => gateway.app.request("/v2/operator/session", { headers: bearer(t) });
    const { token } = await gateway.tokens.issue({ kind: "operator", sub: operatorId, scopes: [] }, 600);
    expect(await (await session(token)).json()).toMatchObject({ operatorId });
    expect((await getCheese(bearer(token))).status).toBe(403);
    // A key removed from API_KEYS: its sessions end with it.
    const orphan = await gateway.tokens.issue({ kind: "operator", sub: "op:000000000000", scopes: [] }, 600);
    const refused = await session(orphan.token);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { message: string }).message).toMatch(/no longer configured/);
  });

  it("refuses an API key with 403 where only cheesy_oauth with write:cheeses is allowed", async () => {
    expect((await postCheese({ "x-api-key": OPERATOR_KEY })).status).toBe(403);
  });

  it("takes a client token for what its scopes allow: write:cheeses creates, read:cheeses only reads (403)", async () => {
    const client = (scopes: ("read:cheeses" | "write:cheeses")[]) =>
      gateway.tokens.issue({ kind: "client", sub: OPERATOR_CLIENT.id, scopes }, 600);
    const writer = await client(["read:cheeses", "write:cheeses"]);
    expect((await postCheese({ authorization: `Bearer ${writer.token}` })).status).toBe(201);
    const reader = await client(["read:cheeses"]);
    expect((await getCheese({ authorization: `Bearer ${reader.token}` })).status).toBe(200);
    const forbidden = await postCheese({ authorization: `Bearer ${reader.token}` });
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toMatchObject({ code: 403, type: "forbidden" });
  });

  it("refuses tokens with a foreign signature, alg none, or past expiry", async () => {
    const foreign = new TokenSigner();
    const forged = await foreign.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["write:cheeses"] },
      60,
      "http://127.0.0.1:8080",
    );
    expect((await postCheese({ authorization: `Bearer ${forged.token}` })).status).toBe(401);

    const unsigned = new UnsecuredJWT({ kind: "client", scope: "write:cheeses" })
      .setSubject(OPERATOR_CLIENT.id)
      .setJti("x")
      .setIssuer("http://127.0.0.1:8080")
      .setExpirationTime("1h")
      .encode();
    expect((await postCheese({ authorization: `Bearer ${unsigned}` })).status).toBe(401);

    const expired = await gateway.tokens.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["write:cheeses"] },
      -10,
    );
    expect((await postCheese({ authorization: `Bearer ${expired.token}` })).status).toBe(401);

    const { privateKey } = generateKeyPairSync("ed25519");
    const otherKid = await new SignJWT({ kind: "client", scope: "write:cheeses" })
      .setProtectedHeader({ alg: "EdDSA", kid: "not-ours" })
      .setSubject(OPERATOR_CLIENT.id)
      .setJti("y")
      .setIssuer("http://127.0.0.1:8080")
      .setExpirationTime("1h")
      .sign(privateKey);
    expect((await postCheese({ authorization: `Bearer ${otherKid}` })).status).toBe(401);
  });

  it("says in a fixed sentence of its own why a token is refused, never the JWT library's message", async () => {
    const foreign = new TokenSigner();
    const claims = { kind: "client" as const, sub: OPERATOR_CLIENT.id, scopes: ["write:cheeses" as const] };
    const forged = (await foreign.issue(claims, 60, "http://127.0.0.1:8080")).token;
    const unsigned = new UnsecuredJWT({ kind: "client", scope: "write:cheeses" })
      .setSubject(OPERATOR_CLIENT.id)
      .setJti("x")
      .setIssuer("http://127.0.0.1:8080")
      .setExpirationTime("1h")
      .encode();
    const expired = (await gateway.tokens.issue(claims, -10)).token;
    const messages = new Map<string, string>();
    for (const [name, token] of Object.entries({ forged, unsigned, expired, garbage: "a.b.c" })) {
      const response = await postCheese({ authorization: `Bearer ${token}` });
      expect(response.status, name).toBe(401);
      messages.set(name, ((await response.json()) as { message: string }).message);
    }
    expect(messages.get("expired")).toBe("token expired: get a new one");
    expect(messages.get("forged")).toBe("token is signed with a key this server does not know");
    for (const [name, message] of messages) {
      // jose's words: its claim checks, its error names, its parsing.
      expect(message, name).not.toMatch(/claim|timestamp|JWS|JWT|Compact|"alg"|unexpected|check failed/);
      expect(message, name).toMatch(/^token /);
    }
  });
});

describe("verified tokens are remembered, never past their expiry", () => {
  it("accepts a token again without its signature checked anew, and refuses it once expired", async () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const issuer = new TokenSigner(clock);
    const bus = createInProcessBroker().connect("gateway");
    serveRpc(bus, identityRpc.jwks, { queue: "customer" }, async () => issuer.jwks());
    const tokens = new TokenVerifier(bus, "http://127.0.0.1:8080", 1000, clock);
    const { token } = await issuer.issue(
      { kind: "client", sub: "c1", scopes: ["read:cheeses"] },
      60,
      "http://127.0.0.1:8080",
    );
    const first = await tokens.verify(token);
    // Every request with the token gets the same claims: no caller can change them for the next.
    expect(() => (first.scopes as string[]).push("write:cheeses")).toThrow(TypeError);
    expect(await tokens.verify(token)).toBe(first);
    expect(first.scopes).toEqual(["read:cheeses"]);
    await clock.advance(60_000);
    await expect(tokens.verify(token)).rejects.toThrow(/exp/);
  });
});

describe("the keys tokens are verified against, as the customer service publishes them", () => {
  const ISSUER = "http://127.0.0.1:8080";
  const claims = { kind: "client" as const, sub: "c1", scopes: ["read:cheeses" as const] };

  it("fetches the keys again for a token of a key it does not know (a new signing key), at most every 10 s", async () => {
    const clock = new ManualClock("2026-01-01T00:00:00.000Z");
    const first = new TokenSigner(clock);
    const second = new TokenSigner(clock);
    const foreign = new TokenSigner(clock);
    let published = first;
    let fetches = 0;
    const bus = createInProcessBroker().connect("gateway");
    serveRpc(bus, identityRpc.jwks, { queue: "customer" }, async () => {
      fetches++;
      return published.jwks();
    });
    const tokens = new TokenVerifier(bus, ISSUER, 1000, clock);

    await tokens.verify((await first.issue(claims, 600, ISSUER)).token);
    expect(fetches).toBe(1);
    // The customer service signs with a new key: its tokens are refused until the keys may be
    // fetched again, then accepted.
    published = second;
    const rotated = (await second.issue(claims, 600, ISSUER)).token;
    await expect(tokens.verify(rotated)).rejects.toMatchObject({ code: "ERR_JWKS_NO_MATCHING_KEY" });
    expect(fetches).toBe(1);
    await clock.advance(10_000);
    expect((await tokens.verify(rotated)).sub).toBe("c1");
    expect(fetches).toBe(2);
    // A token of a key nobody publishes makes no fetch within the 10 s.
    await expect(tokens.verify((await foreign.issue(claims, 600, ISSUER)).token)).rejects.toMatchObject({
      code: "ERR_JWKS_NO_MATCHING_KEY",
    });
    expect(fetches).toBe(2);
  });

  it("answers 503, not 401, for a token when the keys cannot be fetched", async () => {
    const issuer = new TokenSigner();
    const tokens = new TokenVerifier(createInProcessBroker().connect("gateway"), ISSUER, 200);
    await expect(tokens.verify((await issuer.issue(claims, 600, ISSUER)).token)).rejects.toMatchObject({
      body: { status: 503, type: "service_unavailable" },
    });
  });
});
