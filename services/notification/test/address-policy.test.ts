import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { forbiddenAddressReason, guardedLookup, webhookUrlProblem } from "../src/security/address-policy.ts";

describe("the address classifier", () => {
  const refused: [string, RegExp][] = [
    ["127.0.0.1", /loopback/],
    ["127.255.255.254", /loopback/],
    ["0.0.0.0", /unspecified/],
    ["10.0.0.1", /private/],
    ["10.255.255.255", /private/],
    ["172.16.0.1", /private/],
    ["172.31.255.255", /private/],
    ["192.168.1.1", /private/],
    ["100.64.0.1", /carrier-grade NAT/],
    ["100.127.255.255", /carrier-grade NAT/],
    ["169.254.169.254", /link-local/],
    ["169.254.0.1", /link-local/],
    ["192.0.0.192", /reserved/],
    ["192.0.2.1", /reserved \(documentation/],
    ["198.51.100.7", /reserved \(documentation/],
    ["203.0.113.9", /reserved \(documentation/],
    ["198.18.0.1", /benchmarking/],
    ["192.88.99.1", /reserved/],
    ["192.175.48.1", /AS112/],
    ["224.0.0.1", /multicast/],
    ["240.0.0.1", /reserved/],
    ["255.255.255.255", /broadcast/],
    ["::1", /loopback/],
    ["::", /unspecified/],
    ["fe80::1", /link-local/],
    ["fe80::1%eth0", /link-local/],
    ["fd00:ec2::254", /unique-local/],
    ["fc00::1", /unique-local/],
    ["fec0::1", /site-local/],
    ["ff02::1", /multicast/],
    ["100::1", /discard-only/],
    // IPv4 inside IPv6: refused as forms, naming the embedded address when it is not global.
    ["::ffff:127.0.0.1", /^IPv4-mapped embedding the loopback address 127\.0\.0\.1$/],
    ["::ffff:7f00:1", /IPv4-mapped embedding the loopback/],
    ["::ffff:169.254.169.254", /IPv4-mapped embedding the link-local/],
    ["::ffff:8.8.8.8", /^IPv4-mapped$/],
    ["::ffff:0:7f00:1", /^IPv4-translated embedding the loopback address 127\.0\.0\.1$/],
    ["::ffff:0:808:808", /^IPv4-translated$/],
    ["::7f00:1", /unassigned IPv6/], // IPv4-compatible (deprecated): outside 2000::/3
    ["::127.0.0.1", /IPv4-mapped embedding the loopback/], // the dotted spelling, as ipaddr.js reads it
    ["64:ff9b::a9fe:a9fe", /^NAT64 embedding the link-local .* 169\.254\.169\.254$/],
    ["64:ff9b::7f00:1", /NAT64 embedding the loopback/],
    ["64:ff9b::808:808", /^NAT64$/],
    ["64:ff9b:1::a00:1", /NAT64/], // local-use NAT64 prefix
    ["2002:0a00:0001::1", /^6to4 embedding the private address 10\.0\.0\.1$/],
    ["2002:0808:0808::1", /^6to4$/],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", /^Teredo embedding the loopback address 127\.0\.0\.1$/],
    ["2001:0:4136:e378:8000:63bf:f5ff:fffe", /^Teredo embedding the private address 10\.0\.0\.1$/],
    ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", /^Teredo$/], // client 8.8.8.8: Teredo all the same
    ["2001:db8::1", /reserved/],
    ["3fff::1", /reserved/],
    ["2001:2::1", /benchmarking/],
    ["2001:10::1", /ORCHID/],
    ["5f00::1", /SRv6/],
    ["4000::1", /unassigned IPv6/],
    // ISATAP interface ids in a global prefix carry an IPv4 address too.
    ["2606:4700::5efe:7f00:1", /^ISATAP embedding the loopback address 127\.0\.0\.1$/],
    ["2606:4700::200:5efe:c0a8:101", /^ISATAP embedding the private address 192\.168\.1\.1$/],
    ["[::1]", /loopback/],
  ];
  it.each(refused)("refuses %s", (address, reason) => {
    expect(forbiddenAddressReason(address)).toMatch(reason);
  });

  const allowed = [
    "8.8.8.8",
    "93.184.216.34",
    "172.15.255.255",
    "172.32.0.1",
    "100.63.255.255",
    "100.128.0.1",
    "169.253.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "2606:4700::5efe:808:808", // ISATAP form with a global IPv4 address
  ];
  it.each(allowed)("allows the global unicast address %s", (address) => {
    expect(forbiddenAddressReason(address)).toBeUndefined();
  });

  it("does not take a host name for an address", () => {
    expect(forbiddenAddressReason("example.com")).toBe("not an IP address");
  });
});

const resolverOf =
  (table: Record<string, string[]>) =>
  async (host: string): Promise<LookupAddress[]> => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`${host} not found`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

describe("the URL policy at registration", () => {
  const resolve = resolverOf({
    "hooks.example.com": ["93.184.216.34", "2606:2800:220:1::1"],
    "sneaky.example.com": ["93.184.216.34", "10.0.0.5"],
    "metadata.example.com": ["169.254.169.254"],
    "v6local.example.com": ["fd00::1"],
  });
  const strict = { allowPrivate: false, resolve };

  it("accepts https URLs whose every address is public", async () => {
    expect(await webhookUrlProblem("https://hooks.example.com/cheese", strict)).toBeUndefined();
    expect(await webhookUrlProblem("https://93.184.216.34:8443/x", strict)).toBeUndefined();
  });

  it("refuses names resolving to any private or metadata address, and names that do not resolve", async () => {
    expect(await webhookUrlProblem("https://sneaky.example.com/", strict)).toMatch(/private.*10\.0\.0\.5/);
    expect(await webhookUrlProblem("https://metadata.example.com/", strict)).toMatch(/link-local/);
    expect(await webhookUrlProblem("https://v6local.example.com/", strict)).toMatch(/unique-local/);
    expect(await webhookUrlProblem("https://nowhere.example.com/", strict)).toMatch(/does not resolve/);
  });

  it("refuses a name under .invalid without asking a resolver (RFC 6761)", async () => {
    const asked: string[] = [];
    const recording = {
      allowPrivate: false,
      resolve: async (host: string) => {
        asked.push(host);
        return resolve(host);
      },
    };
    expect(await webhookUrlProblem("https://no-such-host.invalid/hooks", recording)).toBe(
      "host no-such-host.invalid does not resolve",
    );
    expect(await webhookUrlProblem("https://NO-SUCH-HOST.INVALID./hooks", recording)).toMatch(
      /does not resolve/,
    );
    expect(await webhookUrlProblem("https://invalid.example.com/", recording)).toMatch(/does not resolve/);
    expect(asked).toEqual(["invalid.example.com"]);
  });

  it("refuses literal private addresses in every spelling the URL parser accepts", async () => {
    for (const url of [
      "https://127.0.0.1/",
      "https://2130706433/",
      "https://0x7f.1/",
      "https://127.1/",
      "https://[::1]/",
      "https://[::ffff:127.0.0.1]/",
      "https://[fd00:ec2::254]/",
      "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
      "https://[::ffff:0:7f00:1]/",
    ]) {
      expect(await webhookUrlProblem(url, strict), url).toMatch(/must not target/);
    }
  });

  it("refuses credentials in the URL, private URLs allowed or not", async () => {
    const problem = /must not contain credentials/;
    expect(await webhookUrlProblem("https://user:pw@hooks.example.com/", strict)).toMatch(problem);
    expect(await webhookUrlProblem("https://user@hooks.example.com/", strict)).toMatch(problem);
    expect(await webhookUrlProblem("https://:pw@hooks.example.com/", strict)).toMatch(problem);
    expect(
      await webhookUrlProblem("http://user:pw@127.0.0.1:9999/", { allowPrivate: true, resolve }),
    ).toMatch(problem);
  });

  it("requires https unless private URLs are allowed, and then allows http to loopback", async () => {
    expect(await webhookUrlProblem("http://hooks.example.com/", strict)).toBe("must use https");
    expect(await webhookUrlProblem("ftp://hooks.example.com/", strict)).toBe("must use https");
    expect(
      await webhookUrlProblem("http://127.0.0.1:9999/", { allowPrivate: true, resolve }),
    ).toBeUndefined();
    expect(await webhookUrlProblem("ftp://127.0.0.1/", { allowPrivate: true, resolve })).toBe(
      "must use http or https",
    );
  });
});

describe("the connect-time lookup", () => {
  const lookup = guardedLookup(
    resolverOf({
      "hooks.example.com": ["93.184.216.34"],
      "rebound.example.com": ["93.184.216.34", "127.0.0.1"],
    }),
  );
  const run = (host: string, options: { all?: boolean }) =>
    new Promise<{ error: Error | null; address: unknown }>((resolve) =>
      lookup(host, options, (error, address) => resolve({ error, address })),
    );

  it("hands the socket exactly the checked addresses", async () => {
    expect(await run("hooks.example.com", {})).toEqual({ error: null, address: "93.184.216.34" });
    expect(await run("hooks.example.com", { all: true })).toEqual({
      error: null,
      address: [{ address: "93.184.216.34", family: 4 }],
    });
  });

  it("fails the connection when any address is forbidden", async () => {
    const { error } = await run("rebound.example.com", { all: true });
    expect(error?.message).toMatch(/loopback address \(127\.0\.0\.1\)/);
  });
});
