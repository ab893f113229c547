import { isIP } from "node:net";

/**
 * IPv4 callers are counted per address; IPv6 callers per /64, the block one subscriber gets, so
 * nobody holding a /64 has 2^64 fresh buckets.
 */
export function rateLimitedNetwork(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const expanded = expandIPv6(ip);
  return expanded ? `${expanded.slice(0, 4).join(":")}::/64` : ip;
}

function expandIPv6(ip: string): string[] | undefined {
  const [head = "", tail] = ip.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  if (right.some((part) => part.includes(".")) || left.some((part) => part.includes("."))) return undefined;
  const missing = 8 - left.length - right.length;
  if (missing < 0) return undefined;
  return [...left, ...Array(tail === undefined ? 0 : missing).fill("0"), ...right].map((p) =>
    Number.parseInt(p || "0", 16).toString(16),
  );
}
