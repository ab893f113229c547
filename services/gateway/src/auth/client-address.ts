import { BlockList, isIP } from "node:net";
import { z } from "zod";

/**
 * `TRUSTED_PROXIES`: comma-separated addresses or CIDR ranges of proxies in front of the gateway
 * (a Kubernetes ingress, a load balancer). Only their `X-Forwarded-For` is believed; without it,
 * every anonymous caller behind an ingress would share the ingress's rate-limit bucket, and a
 * client could pick its own bucket by sending the header itself.
 */
export const trustedProxiesSchema = z
  .string()
  .default("")
  .transform((text, ctx) => {
    const list = new BlockList();
    for (const entry of text
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean)) {
      const [address = "", prefix] = entry.split("/");
      const family = isIP(address) === 6 ? "ipv6" : "ipv4";
      const maxPrefix = family === "ipv6" ? 128 : 32;
      if (
        isIP(address) === 0 ||
        (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > maxPrefix))
      ) {
        ctx.addIssue({ code: "custom", message: `"${entry}" is not an address or CIDR range` });
        return z.NEVER;
      }
      if (prefix === undefined) list.addAddress(address, family);
      else list.addSubnet(address, Number(prefix), family);
    }
    return list;
  });

/**
 * The client's address: the connection's peer, or, when that peer is a trusted proxy, the
 * nearest address in X-Forwarded-For that is not itself a trusted proxy (right to left, the
 * order proxies append in).
 */
export function clientAddress(peer: string, forwardedFor: string | undefined, trusted: BlockList): string {
  let address = unmap(peer);
  if (!forwardedFor || !isTrusted(address, trusted)) return address;
  const hops = forwardedFor.split(",").map((hop) => unmap(withoutPort(hop.trim())));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    // A hop we cannot read ends the walk: whatever stands left of it was not written by a
    // proxy we trust, so the last trusted address is the best we know.
    if (isIP(hop) === 0) return address;
    address = hop;
    if (!isTrusted(address, trusted)) return address;
  }
  return address;
}

/** Proxies may append `1.2.3.4:5678` or `[2001:db8::1]:5678`. */
function withoutPort(hop: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hop);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(hop);
  return v4WithPort ? v4WithPort[1]! : hop;
}

function isTrusted(address: string, trusted: BlockList): boolean {
  const family = isIP(address);
  return family !== 0 && trusted.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** `::ffff:10.0.0.1` is the IPv4 address 10.0.0.1 as a dual-stack socket reports it. */
function unmap(address: string): string {
  return address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}
