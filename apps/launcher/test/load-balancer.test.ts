import { type AddressInfo, connect, type Server } from "node:net";
import { createLogger } from "@cheese/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayServer } from "../../../services/gateway/src/server.ts";
import { startLoadBalancer } from "../src/load-balancer.ts";

/** The gateway's real HTTP server (as main.ts runs it) with an app that refuses big bodies. */
let gateway: Server;
let balancer: Server;
beforeAll(async () => {
  gateway = createGatewayServer(
    async (request: Request) => {
      if (Number(request.headers.get("content-length")) > 1024 * 1024)
        return new Response('{"code":413}', { status: 413, headers: { connection: "close" } });
      return new Response('{"code":401}', { status: 401 });
    },
    { logger: createLogger("balancer-test", "silent") },
  );
  await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
  balancer = await startLoadBalancer(0, [(gateway.address() as AddressInfo).port]);
});
afterAll(async () => {
  balancer?.close();
  gateway?.closeAllConnections();
  await new Promise((resolve) => gateway?.close(resolve));
});

/**
 * Sends a request in 16 KiB pieces, still sending after the answer came (as a client streaming a
 * body does), and resolves with the status line it read, or how the connection failed.
 */
function sendInPieces(port: number, head: string, bodyBytes: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    let failure = "";
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      failure = error.code ?? error.message;
    });
    socket.on("close", () => resolve(received.split("\r\n")[0] || `no answer (${failure || "closed"})`));
    const bytes = Buffer.concat([Buffer.from(head, "latin1"), Buffer.alloc(bodyBytes, 0x20)]);
    let offset = 0;
    const sendNext = () => {
      if (offset >= bytes.length || socket.destroyed || !socket.writable) return;
      socket.write(bytes.subarray(offset, offset + 16 * 1024), () => setImmediate(sendNext));
      offset += 16 * 1024;
    };
    socket.once("connect", sendNext);
  });
}

describe("the gateway behind the development load balancer", () => {
  const port = () => (balancer.address() as AddressInfo).port;

  it("passes on the gateway's 431 to a client still sending a header section over 16 KiB", async () => {
    const head = `GET /v2/cheeses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${"a".repeat(200_000)}\r\n\r\n`;
    const answers = await Promise.all(Array.from({ length: 20 }, () => sendInPieces(port(), head, 0)));
    expect(answers).toEqual(answers.map(() => "HTTP/1.1 431 Request Header Fields Too Large"));
  });

  it("passes on the gateway's 413 to a client still sending a body over 1 MiB", async () => {
    const head = "POST /v2/cheeses HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n";
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => sendInPieces(port(), head, 3_000_000)),
    );
    expect(answers).toEqual(answers.map(() => "HTTP/1.1 413 Payload Too Large"));
  });

  it("still answers a request sent at once", async () => {
    const answer = await sendInPieces(
      port(),
      "GET /v2/cheeses HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      0,
    );
    expect(answer).toBe("HTTP/1.1 401 Unauthorized");
  });
});
