import { connect, createServer, type Server, type Socket } from "node:net";
import { closeGently } from "@cheese/service-kit/launch";

/** The most of one request kept to send again (a header section; the gateway allows 16 KiB). */
const REPLAYABLE_BYTES = 64 * 1024;
/** Methods a request may be sent to another gateway with, as no gateway answered it (RFC 9110 §9.2.2). */
const REPLAYABLE = /^(GET|HEAD|OPTIONS) /;

/** A gateway behind the balancer. */
export interface Backend {
  host: string;
  port: number;
}

/** A gateway on this host's loopback. */
export const onLoopback = (port: number): Backend => ({ host: "127.0.0.1", port });

/**
 * A TCP round-robin balancer in front of several gateway processes, so `REPLICAS=2 pnpm start`
 * serves one address like a load balancer in production would. A backend that refuses the
 * connection is skipped for that connection. A gateway that dies (or closes a kept-alive
 * connection) just as a client sends a request on it does not fail the request when it is a
 * GET, HEAD or OPTIONS without a body and no byte of an answer came: the request is sent to the
 * next gateway on a new connection, as a proxy does with `proxy_next_upstream error`. Anything
 * else gets the connection closed, so the client learns at once.
 */
export async function startLoadBalancer(port: number, backends: Backend[]): Promise<Server> {
  let next = 0;
  const server = createServer((client) => {
    client.pause();
    new Relay(client, backends).attach(next++ % backends.length, backends.length);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return server;
}

/** One client connection and the gateway connection it is relayed to. */
class Relay {
  /** What the client sent since the gateway last answered: the request in flight, if it fits. */
  private unanswered: Buffer[] = [];
  private unansweredBytes = 0;
  /** The gateway sent something since the client last did: the request in flight is answered. */
  private answered = false;
  /** The request in flight was sent again once already. */
  private replayed = false;
  private upstream: Socket | undefined;

  constructor(
    private readonly client: Socket,
    private readonly backends: Backend[],
  ) {
    client.on("data", (chunk: Buffer) => {
      if (this.answered) {
        this.answered = false;
        this.replayed = false;
        this.unanswered = [];
        this.unansweredBytes = 0;
      }
      this.unansweredBytes += chunk.length;
      // Too big to keep: it will not be sent again.
      this.unanswered = this.unansweredBytes > REPLAYABLE_BYTES ? [] : [...this.unanswered, chunk];
    });
    client.once("close", () => this.upstream?.destroy());
    client.on("error", () => this.upstream?.destroy());
  }

  /** Connects to backend `index`, trying the next one when refused, `attemptsLeft` in all. */
  attach(index: number, attemptsLeft: number, replay?: Buffer): void {
    const { client, backends } = this;
    if (attemptsLeft === 0 || client.destroyed) {
      client.destroy();
      return;
    }
    let connected = false;
    const { host, port } = backends[index]!;
    const upstream = connect(port, host);
    this.upstream = upstream;
    upstream.once("connect", () => {
      connected = true;
      if (replay) upstream.write(replay);
      client.pipe(upstream);
      // Not ended with the gateway: the request in flight may yet go to another one.
      upstream.pipe(client, { end: false });
      upstream.on("data", () => {
        this.answered = true;
      });
      client.resume();
    });
    upstream.on("error", () => {
      // Refused: that gateway is down (restarting); the next one takes this connection.
      if (!connected) this.attach((index + 1) % backends.length, attemptsLeft - 1, replay);
    });
    upstream.once("close", () => {
      if (!connected) return;
      client.unpipe(upstream);
      const request = this.replayable();
      if (request && !client.destroyed) {
        this.replayed = true;
        // Held until the next gateway takes it, with anything the client sends meanwhile.
        client.pause();
        this.attach((index + 1) % backends.length, backends.length, request);
      } else {
        // The gateway going away ends the pair, so a client never waits on a dead gateway.
        closeGently(client);
      }
    });
  }

  /** The request in flight, when it may be sent to another gateway: see `startLoadBalancer`. */
  private replayable(): Buffer | undefined {
    if (this.answered || this.replayed || this.unanswered.length === 0) return undefined;
    const request = Buffer.concat(this.unanswered);
    const text = request.toString("latin1");
    // One whole request without a body: its header section ends where the bytes end.
    if (!REPLAYABLE.test(text) || text.indexOf("\r\n\r\n") !== text.length - 4) return undefined;
    return request;
  }
}
