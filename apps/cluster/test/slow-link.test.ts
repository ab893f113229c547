import { spawn, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DELAY_MS, type SlowLinkMechanism, slowLink, slowLinkMechanism } from "../src/slow-link.ts";

/**
 * The slow link of `pnpm cluster faults` (c), measured: two network namespaces joined by a veth
 * pair, UDP probes from one to an echo in the other, before, during and after the fault. Root and
 * `ip netns` are needed; elsewhere it says why it skips. Names of its own (not `cheese-`), so a
 * cluster's hosts are not touched.
 */
const A = { netns: "slowlink-a", device: "slowlink0", address: "10.213.1.1" };
const B = { netns: "slowlink-b", device: "slowlink1", address: "10.213.1.2" };
const PORT = 9_000;
const PROBES = 200;

const reason =
  process.getuid?.() !== 0
    ? "the slow link test needs root (ip netns): skipped"
    : spawnSync("ip", ["netns", "list"]).status !== 0
      ? "the slow link test needs `ip netns` (iproute2): skipped"
      : undefined;
if (reason) console.warn(reason);

function ip(...args: string[]): void {
  const done = spawnSync("ip", args, { encoding: "utf8" });
  if (done.status !== 0) throw new Error(`ip ${args.join(" ")}: ${done.stderr}`);
}

function removeNamespaces(): void {
  for (const { netns } of [A, B]) spawnSync("ip", ["netns", "delete", netns]);
}

/** Echoes each UDP datagram back to its sender; prints `listening` once bound. */
const echo = `
const socket = require("node:dgram").createSocket("udp4");
socket.on("message", (message, from) => socket.send(message, from.port, from.address));
socket.bind(${PORT}, "${B.address}", () => console.log("listening"));
`;

/**
 * Sends PROBES numbered datagrams 10 ms apart and prints each answered one's round trip in ms; a
 * probe not answered within 1.5 s of the last one sent counts as lost.
 */
const probe = `
const socket = require("node:dgram").createSocket("udp4");
const sentAt = new Map();
const rtts = [];
socket.on("message", (message) => {
  const at = sentAt.get(message.readUInt32BE(0));
  if (at === undefined) return;
  rtts.push(Number(process.hrtime.bigint() - at) / 1e6);
  sentAt.delete(message.readUInt32BE(0));
});
let next = 0;
const send = () => {
  if (next === ${PROBES}) {
    setTimeout(() => { console.log(JSON.stringify(rtts)); socket.close(); }, 1500);
    return;
  }
  const datagram = Buffer.alloc(4);
  datagram.writeUInt32BE(next);
  sentAt.set(next++, process.hrtime.bigint());
  socket.send(datagram, ${PORT}, "${B.address}");
  setTimeout(send, 10);
};
socket.bind(0, "${A.address}", send);
`;

interface Measured {
  answered: number;
  lost: number;
  min: number;
  median: number;
}

async function measure(): Promise<Measured> {
  const done = spawnSync("ip", ["netns", "exec", A.netns, process.execPath, "-e", probe], {
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(done.status, done.stderr).toBe(0);
  const rtts = (JSON.parse(done.stdout) as number[]).sort((x, y) => x - y);
  return {
    answered: rtts.length,
    lost: PROBES - rtts.length,
    min: rtts[0] ?? Number.NaN,
    median: rtts[Math.floor(rtts.length / 2)] ?? Number.NaN,
  };
}

describe.skipIf(reason)("the slow link of pnpm cluster faults", () => {
  let mechanism: SlowLinkMechanism;
  let echoServer: ReturnType<typeof spawn> | undefined;

  beforeAll(async () => {
    mechanism = slowLinkMechanism();
    console.log(`slow link by ${mechanism.kind}`);
    removeNamespaces();
    for (const { netns } of [A, B]) ip("netns", "add", netns);
    ip("link", "add", A.device, "netns", A.netns, "type", "veth", "peer", "name", B.device, "netns", B.netns);
    for (const { netns, device, address } of [A, B]) {
      ip("-n", netns, "addr", "add", `${address}/30`, "dev", device);
      ip("-n", netns, "link", "set", device, "up");
    }
    const server = spawn("ip", ["netns", "exec", B.netns, process.execPath, "-e", echo], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    echoServer = server;
    await new Promise<void>((resolve, reject) => {
      server.stdout?.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("listening")) resolve();
      });
      server.once("exit", (code) => reject(new Error(`echo exited ${code}`)));
    });
  });

  afterAll(() => {
    echoServer?.kill("SIGKILL");
    removeNamespaces();
  });

  it(`adds at least ${DELAY_MS} ms to a round trip and loses some packets, and only while it lasts`, async () => {
    const before = await measure();
    expect(before.lost).toBe(0);
    expect(before.median).toBeLessThan(50);

    const link = await slowLink(A.netns, A.device, mechanism);
    let during: Measured;
    try {
      during = await measure();
    } finally {
      console.log(`${link.what}; healed: ${await link.heal()}`);
    }
    console.log(`round trips: before ${JSON.stringify(before)}, during ${JSON.stringify(during)}`);
    expect(during.min).toBeGreaterThanOrEqual(DELAY_MS);
    expect(during.lost).toBeGreaterThan(0);
    // 5 % of what the slowed host sends: about one round trip in twenty; far from all of them.
    expect(during.lost).toBeLessThan(PROBES * 0.3);

    const after = await measure();
    console.log(`after ${JSON.stringify(after)}`);
    expect(after.lost).toBe(0);
    expect(after.median).toBeLessThan(50);
  });
});
