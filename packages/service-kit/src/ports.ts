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

/**
 * A port free on `host` now, for a process that will listen on it a moment later. It is chosen
 * at random below the kernel's ephemeral range: a port the kernel just gave out for port 0 goes
 * back into that range when closed, where any process on the machine binding port 0 (a health
 * server, say) may get it before ours listens, and then answers in its place. Falls back to the
 * kernel's choice when no port below the range is free.
 */
export async function freeListenPort(host = "127.0.0.1"): Promise<number> {
  const { low } = ephemeralRange();
  const span = low - LOWEST;
  for (let tries = 0; span > 0 && tries < 20; tries++) {
    const port = await listenOnce(LOWEST + Math.floor(Math.random() * span), host);
    if (port !== undefined) return port;
  }
  const port = await listenOnce(0, host);
  if (port === undefined) throw new Error(`no free port on ${host}`);
  return port;
}
