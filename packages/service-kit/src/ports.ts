import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Below this, ports are the well-known and commonly configured ones: never chosen here. */
const LOWEST = 10_000;

/**
 * The ports the kernel hands out by itself (listen on port 0, outgoing connections): Linux's
 * configured range, or the IANA dynamic range elsewhere.
 */
function ephemeralRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/);
    if (Number(low) > 0 && Number(high) >= Number(low)) return { low: Number(low), high: Number(high) };
  } catch {
    // not Linux
  }
  return { low: 49_152, high: 65_535 };
}

function listenOnce(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(undefined));
    server.listen(port, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : undefined));
    });
  });
}

/** Ports from `low` up to, not including, `high`. */
export interface PortRange {
  low: number;
  high: number;
}

/**
 * Where ports are picked, below the kernel's ephemeral range (see `freeListenPort`), in two
 * halves that never meet: `launcher`, the lower, for what `pnpm start` picks itself (its
 * nats-server, the gateways behind its balancer); `tests`, the upper, for the ports tests pick
 * for the systems they start (a gateway's, a receiver's). A port a test picked and handed to a
 * launcher that has not bound it yet can then never be what that launcher, or another one, picks.
 */
export function listenPortRanges(): { launcher: PortRange; tests: PortRange } {
  const { low } = ephemeralRange();
  const middle = LOWEST + Math.floor(Math.max(0, low - LOWEST) / 2);
  return { launcher: { low: LOWEST, high: middle }, tests: { low: middle, high: Math.max(middle, low) } };
}

/**
 * The Fetch standard's "bad ports": `fetch` (undici, and every browser) refuses to connect to
 * them ("bad port"), so no HTTP server of ours may listen on one. 10080 is within the launcher's
 * range: a gateway behind the balancer on it was unreachable by fetch, its console's calls back
 * to it too.
 */
const FETCH_BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
  109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
  526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Ports this process handed out lately (epoch ms): not handed out again before they are bound. */
const handedOut = new Map<number, number>();
const HANDED_OUT_MS = 120_000;

/**
 * A port free on `host` now, for a process that will listen on it a moment later. It is chosen
 * at random below the kernel's ephemeral range: a port the kernel just gave out for port 0 goes
 * back into that range when closed, where any process on the machine binding port 0 (a health
 * server, say) may get it before ours listens, and then answers in its place. It is chosen
 * `within` a range (the launcher's half of `listenPortRanges` by default), never one of `avoid`
 * (a port already promised to another process, such as `GATEWAY_PORT`), never one this process
 * handed out in the last two minutes, and never one `fetch` refuses (`FETCH_BAD_PORTS`). Falls
 * back to the kernel's choice when no port of the range is free.
 */
export async function freeListenPort(
  host = "127.0.0.1",
  options: { avoid?: Iterable<number>; within?: PortRange } = {},
): Promise<number> {
  const { low, high } = options.within ?? listenPortRanges().launcher;
  const avoid = new Set(options.avoid ?? []);
  const now = Date.now();
  for (const [port, at] of handedOut) if (now - at > HANDED_OUT_MS) handedOut.delete(port);
  const usable = (port: number) => !avoid.has(port) && !handedOut.has(port) && !FETCH_BAD_PORTS.has(port);
  const span = high - low;
  for (let tries = 0; span > 0 && tries < 20; tries++) {
    const candidate = low + Math.floor(Math.random() * span);
    if (!usable(candidate)) continue;
    // Held while it is probed: a concurrent call in this process does not probe it too.
    handedOut.set(candidate, now);
    if ((await listenOnce(candidate, host)) !== undefined) return candidate;
    handedOut.delete(candidate);
  }
  for (let tries = 0; tries < 20; tries++) {
    const kernel = await listenOnce(0, host);
    if (kernel === undefined) break;
    if (!usable(kernel)) continue;
    handedOut.set(kernel, now);
    return kernel;
  }
  throw new Error(`no free port on ${host}`);
}
