import { generateKeyPairSync } from "node:crypto";
import { ConfigError, loadConfig } from "@cheese/service-kit";
import { describe, expect, it } from "vitest";
import { customerConfigSchema } from "../src/config.ts";

const load = (env: Record<string, string>) => loadConfig(customerConfigSchema, env);

/** The authorization server's settings: a refusal names the variable, so the operator knows what to fix. */
describe("the customer service's identity configuration, checked at start", () => {
  it.each([
    ["OAUTH_CLIENTS", "{bad"],
    ["OAUTH_CLIENTS", '[{"id":"x","scopes":["fly"]}]'],
    ["JWT_PRIVATE_KEY", "{bad"],
    ["JWT_PRIVATE_KEY", '{"kty":"OKP","crv":"Ed25519","x":"AAAA"}'],
    ["OAUTH_CODE_TTL", "10x"],
    ["OAUTH_CODE_TTL", "2m"],
  ])("refuses %s=%s, naming it", (variable, value) => {
    expect(() => load({ [variable]: value })).toThrow(ConfigError);
    expect(() => load({ [variable]: value })).toThrow(variable);
  });

  it("accepts a signing key, the clients and a code lifetime", () => {
    const jwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
    const config = load({
      JWT_PRIVATE_KEY: JSON.stringify(jwk),
      OAUTH_CLIENTS: '[{"id":"c","secret":"s","scopes":["read:cheeses"],"redirectUris":[],"plan":"pro"}]',
      OAUTH_CODE_TTL: "30s",
    });
    expect(config.OAUTH_CLIENTS.has("c")).toBe(true);
    expect(config.OAUTH_CODE_TTL).toBe(30_000);
  });
});
