import { describe, expect, it } from "vitest";
import { clientAddress, trustedProxiesSchema } from "../src/auth/client-address.ts";

const ingress = trustedProxiesSchema.parse("10.0.0.0/8, 192.168.1.7");

describe("client address behind proxies", () => {
  it("uses the connection's peer when no proxy is trusted, whatever X-Forwarded-For says", () => {
    const none = trustedProxiesSchema.parse("");
    expect(clientAddress("203.0.113.9", "198.51.100.1", none)).toBe("203.0.113.9");
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", () => {
    expect(clientAddress("203.0.113.9", "198.51.100.1", ingress)).toBe("203.0.113.9");
  });

  it("takes the nearest untrusted hop when the peer is a trusted proxy", () => {
    expect(clientAddress("10.1.2.3", "198.51.100.1", ingress)).toBe("198.51.100.1");
    // A client-sent value stands left of what our proxies appended: it is not believed.
    expect(clientAddress("10.1.2.3", "6.6.6.6, 198.51.100.1, 192.168.1.7", ingress)).toBe("198.51.100.1");
    expect(clientAddress("::ffff:10.1.2.3", "198.51.100.1", ingress)).toBe("198.51.100.1");
  });

  it("reads hops that carry a port, and stops at a hop it cannot read", () => {
    expect(clientAddress("10.1.2.3", "198.51.100.1:51234", ingress)).toBe("198.51.100.1");
    expect(clientAddress("10.1.2.3", "[2001:db8::7]:443", ingress)).toBe("2001:db8::7");
    // The client's own value stands left of an unreadable hop: it must not be believed.
    expect(clientAddress("10.1.2.3", "6.6.6.6, not-an-address", ingress)).toBe("10.1.2.3");
  });

  it("falls back to the peer when the header holds nothing usable", () => {
    expect(clientAddress("10.1.2.3", "garbage", ingress)).toBe("10.1.2.3");
    expect(clientAddress("10.1.2.3", undefined, ingress)).toBe("10.1.2.3");
  });

  it("refuses a malformed TRUSTED_PROXIES", () => {
    for (const bad of ["10.0.0.0/abc", "not-an-ip", "10.0.0.0/8,300.1.1.1"]) {
      expect(trustedProxiesSchema.safeParse(bad).success, bad).toBe(false);
    }
  });
});
