import { createHash } from "node:crypto";
import { oauthClientsSchema } from "@cheese/contracts";
import { describe, expect, it } from "vitest";
import {
  parseAuthorizationRequest,
  redirectWith,
  verifierMatches,
} from "../src/domain/oauth/authorization-request.ts";

const clients = oauthClientsSchema.parse(
  JSON.stringify([
    {
      id: "app",
      scopes: ["read:cheeses", "write:cheeses", "read:orders"],
      redirectUris: ["https://app.example/cb"],
    },
    { id: "two", scopes: ["read:orders"], redirectUris: ["https://a.example/cb", "https://b.example/cb"] },
  ]),
);
const verifier = "a".repeat(43);
const challenge = createHash("sha256").update(verifier).digest("base64url");
const parse = (params: Record<string, string>) =>
  parseAuthorizationRequest(new URLSearchParams(params), clients);
const code = {
  response_type: "code",
  client_id: "app",
  code_challenge: challenge,
  code_challenge_method: "S256",
};

describe("authorization requests", () => {
  it("grants what was asked, within what the client may have and a customer may give", () => {
    const parsed = parse({ ...code, scope: "read:cheeses write:cheeses write:orders" });
    expect(parsed).toMatchObject({ ok: true, request: { scopes: ["read:cheeses"] } });
    const everything = parse(code);
    expect(everything).toMatchObject({ ok: true, request: { scopes: ["read:cheeses", "read:orders"] } });
    expect(parse({ ...code, scope: "write:cheeses" })).toMatchObject({
      ok: false,
      redirectError: { error: "invalid_scope" },
    });
  });

  it("matches redirect URIs exactly, and never redirects to one that does not", () => {
    expect(parse({ ...code, redirect_uri: "https://app.example/cb" })).toMatchObject({ ok: true });
    for (const uri of ["https://app.example/cb/", "https://app.example/cb?x=1", "https://APP.example/cb"]) {
      expect(parse({ ...code, redirect_uri: uri }), uri).toMatchObject({
        ok: false,
        showError: expect.any(String),
      });
    }
    // Without redirect_uri the only registered one is used; with several it must be named.
    expect(parse(code)).toMatchObject({ ok: true, request: { redirectUri: "https://app.example/cb" } });
    expect(parse({ ...code, client_id: "two" })).toMatchObject({ ok: false, showError: expect.any(String) });
    expect(parse({ ...code, client_id: "ghost" })).toMatchObject({
      ok: false,
      showError: expect.any(String),
    });
  });

  it("requires PKCE with S256 for codes, but not for the implicit flow", () => {
    const { code_challenge: _c, ...withoutChallenge } = code;
    expect(parse(withoutChallenge)).toMatchObject({ redirectError: { error: "invalid_request" } });
    expect(parse({ ...code, code_challenge_method: "plain" })).toMatchObject({
      redirectError: { error: "invalid_request" },
    });
    expect(parse({ response_type: "token", client_id: "app" })).toMatchObject({
      ok: true,
      request: { responseType: "token" },
    });
    expect(parse({ response_type: "id_token", client_id: "app" })).toMatchObject({
      redirectError: { error: "unsupported_response_type" },
    });
  });

  it("checks a verifier against its S256 challenge", () => {
    expect(verifierMatches(verifier, challenge)).toBe(true);
    expect(verifierMatches("b".repeat(43), challenge)).toBe(false);
    expect(verifierMatches("short", createHash("sha256").update("short").digest("base64url"))).toBe(false);
  });

  it("puts results in the query for codes and in the fragment for tokens", () => {
    expect(redirectWith("https://app.example/cb?x=1", false, { code: "c", state: "s" })).toBe(
      "https://app.example/cb?x=1&code=c&state=s",
    );
    expect(redirectWith("https://app.example/cb", true, { access_token: "t", state: undefined })).toBe(
      "https://app.example/cb#access_token=t",
    );
  });
});
