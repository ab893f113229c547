import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freeListenPort, listenPortRanges } from "../src/ports.ts";

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

  it("is never a port to avoid (the gateway's, given to a launcher), nor one this process handed out already", async () => {
    const { launcher } = listenPortRanges();
    // A range of three free ports, the first of which is promised elsewhere.
    let low = launcher.low + Math.floor(Math.random() * (launcher.high - launcher.low - 3));
    while (!(await allFree([low, low + 1, low + 2]))) low += 3;
    const within = { low, high: low + 3 };
    const picked = [
      await freeListenPort("127.0.0.1", { within, avoid: [low] }),
      await freeListenPort("127.0.0.1", { within, avoid: [low] }),
    ];
    expect(picked.sort()).toEqual([low + 1, low + 2]);
    // Nothing of the range is left: the kernel's choice, never one of the three.
    expect([low, low + 1, low + 2]).not.toContain(
      await freeListenPort("127.0.0.1", { within, avoid: [low] }),
    );
  });

  it("is never a port fetch refuses to connect to (10080, within the launcher's range)", async () => {
    // A range holding 10080 alone: never that port, but the kernel's choice, which fetch reaches.
    const port = await freeListenPort("127.0.0.1", { within: { low: 10_080, high: 10_081 } });
    expect(port).not.toBe(10_080);
    const http = createHttpServer((_, response) => response.end("ok"));
    await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
    try {
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe("ok");
    } finally {
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it("picks the launcher's ports and the tests' from halves that never meet", () => {
    const { launcher, tests } = listenPortRanges();
    expect(launcher.low).toBe(10_000);
    expect(launcher.high).toBeLessThanOrEqual(tests.low);
    expect(tests.high).toBeGreaterThan(tests.low);
  });
});

async function allFree(ports: number[]): Promise<boolean> {
  for (const port of ports) {
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (free) await new Promise((resolve) => server.close(resolve));
    if (!free) return false;
  }
  return true;
}
