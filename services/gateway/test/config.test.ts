import { ConfigError, loadConfig } from "@cheese/service-kit";
import { describe, expect, it } from "vitest";
import { gatewayConfigSchema } from "../src/config.ts";
import { defaultPublicUrl } from "../src/public-url.ts";

const load = (env: Record<string, string>) => loadConfig(gatewayConfigSchema, env);

/** A refusal names the variable, so the operator knows what to fix. */
function refusal(env: Record<string, string>): string {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe("the gateway's configuration, checked at start", () => {
  it.each([
    ["API_KEYS", "nocolon"],
    ["API_KEYS", "key:gold"],
    ["API_KEYS", ":pro"],
    ["OAUTH_CLIENTS", "{bad"],
    ["OAUTH_CLIENTS", '[{"id":"x","scopes":["fly"]}]'],
    ["TRUSTED_PROXIES", "10.0.0.0/99"],
    ["TRUSTED_PROXIES", "fd00::/129"],
    ["TRUSTED_PROXIES", "10.0.0.300"],
    ["JWT_ISSUER", "not a url"],
    ["PUBLIC_URL", "cheese.example.com"],
    ["PUBLIC_URL", "ftp://cheese.example.com"],
    ["PUBLIC_URL", "https://user:pw@cheese.example.com"],
    ["PUBLIC_URL", "https://cheese.example.com/api"],
    ["PUBLIC_URL", "https://cheese.example.com/?x=1"],
    ["RATE_LIMIT_PLANS", "free=ten/unlimited"],
    ["ANON_PLAN", "gold"],
    ["GATEWAY_PORT", "70000"],
    ["RPC_TIMEOUT", "soon"],
    ["HEALTH_PORT", "-1"],
    ["LOG_LEVEL", "loud"],
  ])("refuses %s=%s, naming it", (variable, value) => {
    expect(refusal({ [variable]: value })).toContain(variable);
  });

  it("takes PUBLIC_URL as an origin, and leaves it and JWT_ISSUER unset by default (main.ts fills them in)", () => {
    expect(load({ PUBLIC_URL: "https://api.cheese.example/" }).PUBLIC_URL).toBe("https://api.cheese.example");
    expect(load({ PUBLIC_URL: "HTTP://Cheese.Example:8443" }).PUBLIC_URL).toBe("http://cheese.example:8443");
    const defaults = load({});
    expect([defaults.PUBLIC_URL, defaults.JWT_ISSUER]).toEqual([undefined, undefined]);
    expect(defaultPublicUrl("0.0.0.0", 8080)).toBe("http://127.0.0.1:8080");
    expect(defaultPublicUrl("::", 8080)).toBe("http://127.0.0.1:8080");
    expect(defaultPublicUrl("::1", 9000)).toBe("http://[::1]:9000");
    expect(defaultPublicUrl("127.0.0.1", 9000)).toBe("http://127.0.0.1:9000");
  });

  it("never repeats an operator key in its refusal", () => {
    expect(refusal({ API_KEYS: "s3cret-operator-key" })).not.toContain("s3cret-operator-key");
  });

  it("refuses a production start without credentials; accepts one with an operator key or a client, or outside production", () => {
    expect(refusal({ NODE_ENV: "production" })).toContain("API_KEYS: NODE_ENV=production and no credentials");
    expect(refusal({ NODE_ENV: "production", API_KEYS: "", OAUTH_CLIENTS: "[]" })).toContain("API_KEYS");
    expect(load({ NODE_ENV: "production", API_KEYS: "k:pro" }).API_KEYS.size).toBe(1);
    expect(
      load({ NODE_ENV: "production", OAUTH_CLIENTS: '[{"id":"c","secret":"s"}]' }).OAUTH_CLIENTS.size,
    ).toBe(1);
    expect(load({ NODE_ENV: "development" }).API_KEYS.size).toBe(0);
  });

  it("accepts what the README documents", () => {
    const config = load({
      API_KEYS: "k1:free,k2:pro,k3:enterprise",
      OAUTH_CLIENTS: '[{"id":"c","secret":"s","scopes":["read:cheeses"],"redirectUris":[],"plan":"pro"}]',
      TRUSTED_PROXIES: "10.0.0.0/8,192.168.1.1,fd00::/8",
      RATE_LIMIT_PLANS: "free=1000/unlimited",
    });
    expect(config.API_KEYS.size).toBe(3);
    expect(config.OAUTH_CLIENTS.has("c")).toBe(true);
  });
});
