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
      if (isIP(address) === 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) {
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
  const hops = forwardedFor
    .split(",")
    .map((hop) => unmap(hop.trim()))
    .filter((hop) => isIP(hop) !== 0);
  for (let i = hops.length - 1; i >= 0; i--) {
    address = hops[i]!;
    if (!isTrusted(address, trusted)) return address;
  }
  return address;
}

function isTrusted(address: string, trusted: BlockList): boolean {
  const family = isIP(address);
  return family !== 0 && trusted.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** `::ffff:10.0.0.1` is the IPv4 address 10.0.0.1 as a dual-stack socket reports it. */
function unmap(address: string): string {
  return address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}
