import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { Readable } from "node:stream";
import { createLogger } from "@cheese/service-kit";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayServer, KEEP_ALIVE_MS } from "../src/server.ts";
import { testGateway } from "./support.ts";

/** The gateway's app behind its real HTTP server, as main.ts runs it. */
let origin: string;
let port: number;
let stop: () => Promise<void>;
beforeAll(async () => {
  const { app, cleanup } = await testGateway();
  const server = createGatewayServer(app.fetch, { logger: createLogger("gateway-test", "silent") });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${port}`;
  stop = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    cleanup();
  };
});
afterAll(() => stop?.());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends bytes as they are on one connection and reads every answer until the server closes it. */
function exchange(bytes: string): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(parseResponses(Buffer.concat(chunks).toString("latin1"))));
    socket.write(bytes);
  });
}

function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const headers = Object.fromEntries(
      lines.map((line) => [
        line.slice(0, line.indexOf(":")).toLowerCase(),
        line.slice(line.indexOf(":") + 1).trim(),
      ]),
    );
    const length = Number(headers["content-length"] ?? 0);
    responses.push({
      status: Number(statusLine!.split(" ")[1]),
      headers,
      body: rest.slice(end + 4, end + 4 + length),
    });
    rest = rest.slice(end + 4 + length);
  }
  return responses;
}

const errorBody = (status: number) => ({
  code: status,
  type: expect.any(String),
  message: expect.any(String),
});

describe("the gateway's HTTP server", () => {
  it("answers a body over 1 MiB with 413 and Connection: close; the client's next request succeeds", async () => {
    const agent = new Agent({ keepAliveTimeout: 30_000, pipelining: 1 });
    const big = JSON.stringify({ username: "x".repeat(3 * 1024 * 1024), password: "whatever" });
    const streamed = () =>
      Readable.from(
        (function* () {
          for (let i = 0; i < 40; i++) yield Buffer.alloc(64 * 1024, 0x61);
        })(),
      );
    try {
      for (let round = 0; round < 6; round++) {
        // Declared (Content-Length) and streamed (chunked) bodies alike.
        const body = round % 2 === 0 ? big : streamed();
        const refused = await request(`${origin}/v2/customer/login`, {
          method: "POST",
          dispatcher: agent,
          headers: { "content-type": "application/json" },
          body,
        });
        expect(refused.statusCode).toBe(413);
        expect(refused.headers.connection).toBe("close");
        expect(refused.headers["x-request-id"]).toBeTruthy();
        expect(await refused.body.json()).toEqual({ ...errorBody(413), type: "payload_too_large" });

        const next = await request(`${origin}/healthz`, { dispatcher: agent });
        expect(next.statusCode).toBe(200);
        await next.body.text();
      }
    } finally {
      await agent.close();
    }
  });

  it("keeps the connection of a request answered before its body was read: the next one on it is answered", async () => {
    const connection = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 30_000 });
    // 300 KB: more than the request's buffers hold, so most of it is still unread at the answer.
    const body = JSON.stringify({
      url: "http://127.0.0.1:9/",
      events: ["order.placed"],
      secret: "s".repeat(300_000),
    });
    try {
      for (let round = 0; round < 3; round++) {
        const refused = await request(`${origin}/v2/webhooks`, {
          method: "POST",
          dispatcher: connection,
          headers: { "content-type": "application/json", "x-api-key": "not-a-key" },
          body,
        });
        expect(refused.statusCode).toBe(401);
        expect(refused.headers.connection).not.toBe("close");
        await refused.body.json();
        const next = await request(`${origin}/healthz`, { dispatcher: connection, headersTimeout: 5_000 });
        expect(next.statusCode).toBe(200);
        await next.body.text();
      }
    } finally {
      await connection.close();
    }
  });

  it("keeps an idle connection 65 s and says so (Keep-Alive: timeout=65), past a proxy's usual 60 s", async () => {
    const answer = await request(`${origin}/healthz`);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers["keep-alive"]).toBe(`timeout=${KEEP_ALIVE_MS / 1000}`);
    expect(KEEP_ALIVE_MS).toBeGreaterThan(60_000);
    await answer.body.dump();
  });

  it("answers a 20 KB header with 431, the JSON error body and an X-Request-Id", async () => {
    const [response, ...more] = await exchange(
      `GET /v2/cheeses HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${"k".repeat(20_000)}\r\n\r\n`,
    );
    expect(more).toEqual([]);
    expect(response!.status).toBe(431);
    expect(response!.headers["content-type"]).toBe("application/json");
    expect(response!.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(response!.headers.connection).toBe("close");
    expect(JSON.parse(response!.body)).toEqual(errorBody(431));
    // A size limit, as 413: one of the spec's types, not internal_error.
    expect(JSON.parse(response!.body).type).toBe("payload_too_large");
  });

  it("answers 408 and closes a request whose body is trickled in past the request time-out", async () => {
    const { app, cleanup } = await testGateway();
    const slow = createGatewayServer(app.fetch, {
      logger: createLogger("gateway-test", "silent"),
      requestTimeoutMs: 1500,
    });
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
    const socket = connect((slow.address() as AddressInfo).port, "127.0.0.1");
    const started = Date.now();
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", () => {});
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.write(
      "POST /v2/customer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
    );
    // One byte every 100 ms: never idle, never done.
    const trickle = setInterval(() => socket.writable && socket.write(" "), 100);
    try {
      await closed;
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(1400);
      expect(elapsed).toBeLessThan(1500 + 1000 + 1000);
      const [response] = parseResponses(Buffer.concat(chunks).toString("latin1"));
      expect(response!.status).toBe(408);
      expect(response!.headers.connection).toBe("close");
      expect(JSON.parse(response!.body)).toEqual({
        code: 408,
        type: "bad_request",
        message: "request not received in time (headers and body within 1.5 s)",
      });
    } finally {
      clearInterval(trickle);
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
      cleanup();
    }
  });

  it("answers a body of 90,000 unknown fields with a short 422: the first 20 named, the rest counted", async () => {
    const fields = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`f${i}`, 1]));
    const body = JSON.stringify({ username: "trickle", password: "long enough password", ...fields });
    expect(body.length).toBeLessThan(1024 * 1024);
    const response = await fetch(`${origin}/v2/customer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(response.status).toBe(422);
    const text = await response.text();
    expect(text.length).toBeLessThan(4000);
    const answer = JSON.parse(text);
    expect(answer.type).toBe("validation_error");
    expect(answer.errors).toHaveLength(21);
    expect(answer.errors).toContainEqual({ field: "f0", message: "unknown field" });
    expect(answer.errors[20]).toEqual({
      field: "(body)",
      message: expect.stringMatching(/^\d+ more errors not listed \(9000\d in all\)$/),
    });
  });

  it("reads repeated request headers as one value joined with commas, Authorization included", async () => {
    const [twoTokens, twoIds, oneId] = await exchange(
      "GET /v2/cheeses/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n" +
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: first\r\nX-Request-Id: second\r\n\r\n" +
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: only-one\r\nConnection: close\r\n\r\n",
    );
    // "Bearer a, Bearer b" is no bearer token: the second copy is not dropped.
    expect(twoTokens!.status).toBe(401);
    expect(JSON.parse(twoTokens!.body).message).toContain("Authorization must be 'Bearer <token>'");
    // "first, second" is no acceptable id: replaced, not cut to its first copy.
    expect(twoIds!.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(oneId!.headers["x-request-id"]).toBe("only-one");
  });

  it("answers a too large header after a first request on the same connection, too", async () => {
    const responses = await exchange(
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${"t".repeat(20_000)}\r\n\r\n`,
    );
    expect(responses.map((r) => r.status)).toEqual([200, 431]);
    expect(JSON.parse(responses[1]!.body)).toEqual(errorBody(431));
    expect(responses[1]!.headers["x-request-id"]).toBeTruthy();
  });

  it.each([
    ["a request line Node's parser refuses", "GET /v2 cheeses HTTP/1.1\r\nHost: x\r\n\r\n"],
    ["a header line without a colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n"],
    [
      "a bad chunked body",
      "POST /v2/customer/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
    [
      "both Content-Length and chunked",
      "POST /v2/x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ],
    ["HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\n\r\n"],
    ["a Host that is no host", "GET /healthz HTTP/1.1\r\nHost: a b/c\r\n\r\n"],
    ["a backslash in the path", "GET /v2\\cheeses HTTP/1.1\r\nHost: x\r\n\r\n"],
  ])("answers %s with 400, the JSON error body and an X-Request-Id", async (_, bytes) => {
    const [response] = await exchange(bytes);
    expect(response!.status).toBe(400);
    expect(response!.headers["content-type"]).toMatch(/^application\/json/);
    expect(response!.headers["x-request-id"]).toBeTruthy();
    expect(JSON.parse(response!.body)).toEqual({ ...errorBody(400), type: "bad_request" });
  });
});
