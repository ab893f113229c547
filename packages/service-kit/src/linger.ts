import type { Duplex } from "node:stream";

/**
 * How long a closing connection keeps reading what the client still sends (see `closeGently`),
 * and how long the gateway lets a connection with an unread body go silent: nginx's
 * `lingering_timeout`. A client that does not read its answer within it (a busy process on a
 * loaded machine: 2 s was seen too short) loses the answer to the reset. The gateway's server and
 * the launcher's balancer in front of the gateways both linger this long.
 */
export const LINGER_MS = 5_000;

/**
 * Sends the last bytes and half-closes, then keeps reading (and dropping) what the client still
 * sends until it closes too, at most `LINGER_MS`: closing with unread input would reset the
 * connection, and a reset can destroy the answer before the client has read it.
 */
export function closeGently(socket: Duplex, lastBytes?: string): void {
  socket.end(lastBytes);
  socket.on("data", () => {});
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
}
