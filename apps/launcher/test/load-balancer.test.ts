import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, connect, createServer, type Server } from "node:net";
import { createLogger } from "@cheese/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayServer } from "../../../services/gateway/src/server.ts";
import { onLoopback, startLoadBalancer } from "../src/load-balancer.ts";

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
  balancer = await startLoadBalancer(0, [onLoopback((gateway.address() as AddressInfo).port)]);
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

/**
 * A gateway that dies as a request arrives: it answers the first `answering` requests on each
 * connection ("A"), then resets the connection on the next instead of answering.
 */
async function dyingGateway(answering: number): Promise<{ port: number; received: string[]; close(): void }> {
  const received: string[] = [];
  const server = createServer((socket) => {
    let answered = 0;
    socket.on("data", (chunk) => {
      received.push(chunk.toString("latin1"));
      if (answered++ < answering) socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
      else socket.resetAndDestroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, received, close: () => server.close() };
}

/** A gateway that answers every request with "B" and counts the requests it read. */
async function answeringGateway(): Promise<{ port: number; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = createHttpServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    request.on("end", () => response.end("B"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** One kept-alive client connection: sends a request, resolves with the answer's body or how it ended. */
function keptAlive(port: number) {
  const socket = connect(port, "127.0.0.1");
  let received = "";
  let waiting: ((outcome: string) => void) | undefined;
  const settle = (outcome: string) => {
    waiting?.(outcome);
    waiting = undefined;
  };
  socket.on("data", (chunk) => {
    received += chunk.toString("latin1");
    const end = received.indexOf("\r\n\r\n");
    const length = Number(/content-length: (\d+)/i.exec(received)?.[1] ?? Number.NaN);
    if (end >= 0 && received.length >= end + 4 + length) {
      const body = received.slice(end + 4, end + 4 + length);
      received = received.slice(end + 4 + length);
      settle(body);
    }
  });
  socket.on("error", (error: NodeJS.ErrnoException) => settle(`failed (${error.code})`));
  socket.on("close", () => settle("closed without an answer"));
  return {
    send(request: string): Promise<string> {
      return new Promise((resolve) => {
        waiting = resolve;
        socket.write(request);
      });
    },
    close: () => socket.destroy(),
  };
}

/**
 * A balancer in front of a gateway that dies after answering `answering` requests per connection
 * (first in turn) and one that answers, with a kept-alive client connection; all closed after.
 */
async function withDyingGateway(
  answering: number,
  test: (
    client: ReturnType<typeof keptAlive>,
    dying: Awaited<ReturnType<typeof dyingGateway>>,
    other: Awaited<ReturnType<typeof answeringGateway>>,
  ) => Promise<void>,
): Promise<void> {
  const dying = await dyingGateway(answering);
  const other = await answeringGateway();
  const balancer = await startLoadBalancer(0, [onLoopback(dying.port), onLoopback(other.port)]);
  const client = keptAlive((balancer.address() as AddressInfo).port);
  try {
    await test(client, dying, other);
  } finally {
    client.close();
    balancer.close();
    dying.close();
    await other.close();
  }
}

describe("the development load balancer when a gateway dies as a request arrives", () => {
  const get = "GET /v2/cheeses/1 HTTP/1.1\r\nHost: x\r\n\r\n";

  it("sends a GET no gateway answered to the next gateway: the client gets its answer", async () => {
    await withDyingGateway(1, async (client, _dying, other) => {
      expect(await client.send(get)).toBe("A");
      // The kept-alive connection's gateway dies as the next request reaches it.
      expect(await client.send(get)).toBe("B");
      expect(other.requests).toEqual(["GET /v2/cheeses/1"]);
      // And the connection goes on with the gateway that answered.
      expect(await client.send(get)).toBe("B");
    });
  });

  it("never sends a POST again: the client is told at once by the connection closing", async () => {
    await withDyingGateway(0, async (client, dying, other) => {
      const body = '{"name":"Brie"}';
      const outcome = await client.send(
        `POST /v2/cheeses HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      expect(outcome).toBe("closed without an answer");
      expect(dying.received.join("")).toContain("POST /v2/cheeses");
      expect(other.requests).toEqual([]);
    });
  });
});
