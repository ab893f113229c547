import { connect, createServer, type Server, type Socket } from "node:net";

/** How long a client whose gateway closed may still send before its connection is dropped. */
const LINGER_MS = 2_000;

/**
 * A TCP round-robin balancer in front of several gateway processes, so `REPLICAS=2 pnpm start`
 * serves one address like a load balancer in production would. A backend that refuses the
 * connection is skipped for that connection.
 */
export async function startLoadBalancer(port: number, backends: number[]): Promise<Server> {
  let next = 0;
  const server = createServer((client) => {
    client.pause();
    tryBackend(client, backends, next++ % backends.length, backends.length);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return server;
}

function tryBackend(client: Socket, backends: number[], index: number, attemptsLeft: number): void {
  if (attemptsLeft === 0) {
    client.destroy();
    return;
  }
  let connected = false;
  const upstream = connect(backends[index]!, "127.0.0.1");
  upstream.once("connect", () => {
    connected = true;
    client.pipe(upstream).pipe(client);
    client.resume();
  });
  upstream.on("error", () => {
    // Refused: that gateway is down (restarting); the next one takes this connection.
    if (!connected) tryBackend(client, backends, (index + 1) % backends.length, attemptsLeft - 1);
  });
  // The gateway going away ends the pair, so a client never waits on a dead gateway.
  upstream.once("close", () => connected && closeGently(client, upstream));
  client.on("error", () => upstream.destroy());
  client.once("close", () => upstream.destroy());
}

/**
 * Ends the client's side after everything the gateway sent, reading and dropping what the client
 * still sends (a body or header the gateway refused) until it closes, at most `LINGER_MS`: closing
 * with unread input would reset the connection, and the reset can destroy the gateway's answer
 * before the client read it, as the gateway's own server avoids for a direct client.
 */
function closeGently(client: Socket, upstream: Socket): void {
  client.unpipe(upstream);
  client.on("data", () => {});
  client.resume();
  client.end();
  const timer = setTimeout(() => client.destroy(), LINGER_MS);
  timer.unref();
  client.once("close", () => clearTimeout(timer));
}
