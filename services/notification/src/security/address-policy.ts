import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";

/**
 * The SSRF guard: which addresses a webhook may never reach (unless WEBHOOK_ALLOW_PRIVATE_URLS),
 * checked when a registration is made and again when each attempt connects.
 */

type Family = "ipv4" | "ipv6";
const rules: [reason: string, family: Family, network: string, prefix: number][] = [
  ["unspecified", "ipv4", "0.0.0.0", 8],
  ["private", "ipv4", "10.0.0.0", 8],
  ["carrier-grade NAT", "ipv4", "100.64.0.0", 10],
  ["loopback", "ipv4", "127.0.0.0", 8],
  ["link-local (cloud metadata)", "ipv4", "169.254.0.0", 16],
  ["private", "ipv4", "172.16.0.0", 12],
  ["reserved", "ipv4", "192.0.0.0", 24],
  ["documentation", "ipv4", "192.0.2.0", 24],
  ["reserved", "ipv4", "192.88.99.0", 24],
  ["private", "ipv4", "192.168.0.0", 16],
  ["benchmarking", "ipv4", "198.18.0.0", 15],
  ["documentation", "ipv4", "198.51.100.0", 24],
  ["documentation", "ipv4", "203.0.113.0", 24],
  ["multicast", "ipv4", "224.0.0.0", 4],
  ["reserved", "ipv4", "240.0.0.0", 4],
  ["loopback", "ipv6", "::1", 128],
  ["unspecified", "ipv6", "::", 128],
  ["IPv4-compatible", "ipv6", "::", 96],
  ["IPv4-mapped", "ipv6", "::ffff:0:0", 96],
  ["NAT64 local use", "ipv6", "64:ff9b:1::", 48],
  ["discard-only", "ipv6", "100::", 64],
  ["documentation", "ipv6", "2001:db8::", 32],
  ["unique-local (incl. cloud metadata fd00:ec2::254)", "ipv6", "fc00::", 7],
  ["link-local", "ipv6", "fe80::", 10],
  ["site-local", "ipv6", "fec0::", 10],
  ["multicast", "ipv6", "ff00::", 8],
];

const lists = rules.map(([reason, family, network, prefix]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { reason, family, list };
});

/**
 * Why an IP address may not be a webhook target, or undefined when it is a public unicast address.
 * IPv4 embedded in NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses is judged as IPv4.
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const ip = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const version = isIP(ip);
  if (version === 0) return "not an IP address";
  if (version === 4) return matchRule(ip, "ipv4");
  const reason = matchRule(ip, "ipv6");
  if (reason) return reason;
  const embedded = embeddedIPv4(ip);
  return embedded ? matchRule(embedded, "ipv4") : undefined;
}

function matchRule(ip: string, family: Family): string | undefined {
  // Each IPv6 rule is checked as IPv6 only: BlockList would otherwise match IPv4 rules against
  // IPv4-mapped IPv6 addresses, which are refused as a whole anyway.
  return lists.find((rule) => rule.family === family && rule.list.check(ip, family))?.reason;
}

/** The IPv4 address inside a NAT64 or 6to4 address. */
function embeddedIPv4(ip: string): string | undefined {
  const groups = expandIPv6(ip);
  if (!groups) return undefined;
  const quad = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".");
  const isNat64 = groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0);
  if (isNat64) return quad(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return quad(groups[1]!, groups[2]!);
  return undefined;
}

/** Eight 16-bit groups of an IPv6 address (handles `::` and a dotted IPv4 tail). */
export function expandIPv6(ip: string): number[] | undefined {
  let text = ip.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const [head, tail] = halves as [string, string | undefined];
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  const groups = [...left, ...new Array<number>(missing).fill(0), ...right];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

export interface UrlPolicy {
  allowPrivate: boolean;
  resolve?: Resolver;
}

/** A webhook URL's problem in words, or undefined when it may be used. */
export async function webhookUrlProblem(text: string, policy: UrlPolicy): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(policy.allowPrivate && url.protocol === "http:")) {
    return policy.allowPrivate ? "must use http or https" : "must use https";
  }
  if (policy.allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) {
    const reason = forbiddenAddressReason(host);
    return reason ? `must not target a ${reason} address (${host})` : undefined;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await (policy.resolve ?? systemResolver)(host);
  } catch {
    return `host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `host ${host} does not resolve`;
  for (const { address } of addresses) {
    const reason = forbiddenAddressReason(address);
    if (reason) return `must not resolve to a ${reason} address (${host} is ${address})`;
  }
  return undefined;
}

export class ForbiddenAddressError extends Error {
  override readonly name = "ForbiddenAddressError";
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http(s).request that resolves once, refuses the name if any address is
 * forbidden, and hands the socket exactly the addresses it checked, so a DNS answer that changes
 * between the check and the connect (DNS rebinding) cannot slip through.
 */
export function guardedLookup(resolve: Resolver = systemResolver) {
  return (hostname: string, options: { all?: boolean } | number, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const bad = addresses.find(({ address }) => forbiddenAddressReason(address));
        if (addresses.length === 0)
          return callback(
            Object.assign(new Error(`${hostname} does not resolve`), { code: "ENOTFOUND" }),
            "",
          );
        if (bad) {
          const reason = forbiddenAddressReason(bad.address);
          return callback(
            new ForbiddenAddressError(`${hostname} resolves to a ${reason} address (${bad.address})`),
            "",
          );
        }
        if (typeof options === "object" && options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ""),
    );
  };
}
