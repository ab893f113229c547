import { createServer, type Socket, connect as tcpConnect } from "node:net";

/**
 * A TCP relay on 127.0.0.1 in front of a server, for outages a test turns on and off: it can stop
 * forwarding (a server that hangs: connections accepted, never answered) or answer every request
 * itself with a raw response (an HTTP server refusing, say 503 SlowDown), then forward again.
 */
export interface TcpRelay {
  port: number;
  /** Stops forwarding: bytes of open and new connections reach neither side. */
  hang(): void;
  /** Answers each request itself with `response` and closes its connection, forwarding nothing. */
  answerWith(response: string): void;
  /** Forwards again; connections left hanging are cut, so clients open fresh ones. */
  resume(): void;
  close(): Promise<void>;
}

export async function startTcpRelay(
  targetPort: number,
  options: {
    /** Sees what each client sends while forwarding (say, to read a request's signature). */
    onClientData?: (chunk: Buffer) => void;
  } = {},
): Promise<TcpRelay> {
  let mode: { kind: "forward" } | { kind: "hang" } | { kind: "answer"; response: string } = {
    kind: "forward",
  };
  const connections = new Set<{ client: Socket; upstream: Socket }>();
  const server = createServer((client) => {
    const upstream = tcpConnect(targetPort, "127.0.0.1");
    const connection = { client, upstream };
    connections.add(connection);
    client.on("data", (chunk: Buffer) => {
      if (mode.kind === "hang") return;
      if (mode.kind === "answer") {
        upstream.destroy();
        client.end(mode.response);
        return;
      }
      options.onClientData?.(chunk);
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (mode.kind === "forward") client.write(chunk);
    });
    const end = () => {
      connections.delete(connection);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const cutAll = () => {
    for (const { client, upstream } of connections) {
      client.destroy();
      upstream.destroy();
    }
  };
  return {
    port: typeof address === "object" && address ? address.port : 0,
    hang() {
      mode = { kind: "hang" };
    },
    answerWith(response) {
      mode = { kind: "answer", response };
    },
    resume() {
      mode = { kind: "forward" };
      cutAll();
    },
    async close() {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What S3 (and MinIO) answer when asked to slow down: 503 with the `SlowDown` error code. */
export const S3_SLOW_DOWN = (() => {
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';
  return `HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
})();
