import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * The SSRF guard: a webhook may reach global unicast addresses only (unless
 * WEBHOOK_ALLOW_PRIVATE_URLS), checked when a registration is made or changed and again when each
 * attempt connects. Which address is special is ipaddr.js's business (its ranges follow the IANA
 * IPv4 and IPv6 special-purpose address registries); this file only says which ranges a webhook
 * may reach: none of them.
 */

/** Names for ipaddr.js's range names, as a refusal says them. */
const rangeNames: Record<string, string> = {
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
  linkLocal: "link-local (cloud metadata)",
  loopback: "loopback",
  carrierGradeNat: "carrier-grade NAT",
  private: "private",
  reserved: "reserved (documentation, benchmarking or future use)",
  as112: "AS112",
  amt: "AMT",
  uniqueLocal: "unique-local (incl. cloud metadata fd00:ec2::254)",
  ipv4Mapped: "IPv4-mapped",
  deprecatedSiteLocal: "site-local",
  discard: "discard-only",
  rfc6145: "IPv4-translated",
  rfc6052: "NAT64",
  "6to4": "6to4",
  teredo: "Teredo",
  benchmarking: "benchmarking",
  as112v6: "AS112",
  deprecatedOrchid: "ORCHID",
  orchid2: "ORCHIDv2",
  droneRemoteIdProtocolEntityTags: "DRIP entity tag",
  segmentRouting: "SRv6 SID",
};

/** RFC 4291 §2.4: global unicast IPv6 is 2000::/3; everything outside it is unassigned or special. */
const globalUnicastV6 = ipaddr.parseCIDR("2000::/3");

/**
 * Why an IP address may not be a webhook target, or undefined when it is a global unicast
 * address. An address that embeds an IPv4 address (IPv4-mapped, IPv4-translated, NAT64, 6to4,
 * Teredo, ISATAP) is refused, and the refusal names the embedded address when that one is not
 * global either (Teredo's client `2001:0:4136:e378:8000:63bf:80ff:fffe` is 127.0.0.1).
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const ip = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (isIP(ip) === 0) return "not an IP address";
  const parsed = ipaddr.parse(ip);
  const range = parsed.range();
  const embedded = parsed.kind() === "ipv6" ? embeddedIPv4(parsed as ipaddr.IPv6) : undefined;
  const inner = embedded && embedded.range() !== "unicast" ? embedded : undefined;
  const embeds = inner ? ` embedding the ${name(inner.range())} address ${inner}` : "";
  if (range !== "unicast") return `${name(range)}${embeds}`;
  if (parsed.kind() === "ipv6" && !parsed.match(globalUnicastV6)) return "unassigned IPv6";
  if (inner) return `ISATAP${embeds}`;
  return undefined;
}

const name = (range: string) => rangeNames[range] ?? range;

/** The IPv4 address an IPv6 address carries, by the form its range (or interface id) says it has. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = ip.toByteArray();
  const v4 = (offset: number, xor = 0) =>
    new ipaddr.IPv4(bytes.slice(offset, offset + 4).map((byte) => byte ^ xor));
  switch (ip.range()) {
    case "ipv4Mapped":
    case "rfc6145":
    case "rfc6052":
      return v4(12);
    case "6to4":
      return v4(2);
    case "teredo":
      return v4(12, 0xff); // the client's address, obfuscated (RFC 4380 §4)
  }
  // ISATAP (RFC 5214): interface id 0000:5efe or 0200:5efe, then the IPv4 address.
  const isatap = (bytes[8]! & 0xfd) === 0 && bytes[9] === 0 && bytes[10] === 0x5e && bytes[11] === 0xfe;
  return isatap ? v4(12) : undefined;
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

export const CREDENTIALS_PROBLEM = "must not contain credentials (user:password@)";

/** A webhook URL's problem in words, or undefined when it may be used. */
export async function webhookUrlProblem(text: string, policy: UrlPolicy): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL";
  }
  // Credentials would be sent as Basic auth and stored and shown in clear; the signature is the
  // receiver's proof of the sender.
  if (url.username || url.password) return CREDENTIALS_PROBLEM;
  if (url.protocol !== "https:" && !(policy.allowPrivate && url.protocol === "http:")) {
    return policy.allowPrivate ? "must use http or https" : "must use https";
  }
  if (policy.allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) {
    const reason = forbiddenAddressReason(host);
    return reason ? `must not target a ${reason} address (${host})` : undefined;
  }
  // RFC 6761: a name under `.invalid` never resolves, so no resolver is asked (a slow one would
  // hold the registration past its deadline for an answer known beforehand).
  if (/(^|\.)invalid\.?$/.test(host)) return `host ${host} does not resolve`;
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
