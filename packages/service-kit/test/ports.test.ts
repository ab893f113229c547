import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freeListenPort } from "../src/ports.ts";

describe("a port to listen on a moment later", () => {
  it("is free, and not one the kernel hands out for port 0 meanwhile", async () => {
    const port = await freeListenPort();
    let low = 49_152;
    try {
      low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    } catch {
      // not Linux: the IANA dynamic range
    }
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(low);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
