import { randomUUID } from "node:crypto";
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { Duplex } from "node:stream";
import { errorTypeFor } from "@cheese/contracts";
import { closeGently, LINGER_MS, type Logger } from "@cheese/service-kit";
import { getRequestListener } from "@hono/node-server";

/** The most of an unread body drained to keep its connection: an image upload's limit. */
const MAX_DRAIN_BYTES = 11 * 1024 * 1024;
/**
 * The longest a request may take to arrive, headers and body together (docs/api.md "Errors"):
 * past it the gateway answers 408 and closes the connection, however slowly the client was still
 * sending (1 byte a second keeps no connection open longer). A 10 MB upload needs 1.4 Mbit/s.
 */
export const REQUEST_TIMEOUT_MS = 60_000;
/** How often Node looks for requests past their time: the bound is kept within this. */
const TIMEOUT_CHECK_MS = 1_000;
/**
 * How long a kept-alive connection may stay idle before the gateway closes it (`Keep-Alive:
 * timeout=65`; Node's default is 5 s): longer than the idle timeouts of the proxies and load
 * balancers put in front (60 s is common), so the gateway is not the side that closes a connection
 * the other is about to reuse, which a proxy answers with a 502 and a client with "other side
 * closed" (seen in CI: a test's client busy 5.9 s reused a connection the gateway closed at 5 s).
 */
export const KEEP_ALIVE_MS = 65_000;

/**
 * The gateway's HTTP server: the app behind Node's HTTP parser, and the spec's error body with an
 * `X-Request-Id` for what never reaches the app (a request the parser refuses, a header section
 * over 16 KiB, a request target or Host the adapter cannot make a URL of).
 */
type FetchCallback = Parameters<typeof getRequestListener>[0];

export function createGatewayServer(
  fetch: FetchCallback,
  options: { logger: Logger; hostname?: string; requestTimeoutMs?: number },
): Server {
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const { logger } = options;
  const listener = getRequestListener(fetch, {
    ...(options.hostname ? { hostname: options.hostname } : {}),
    // The rest of a body the app did not read is drained below: the adapter's own clean-up closes
    // the connection when the body has not ended 500 ms after the answer, which a busy event loop
    // reaches with the end already received, and the client's next request on it then fails.
    autoCleanupIncoming: false,
    // The adapter's own answer is an empty 400; this one is the API's.
    errorHandler: (error) => {
      const answer = rawError(400, `malformed request: ${(error as Error).message}`);
      const requestId = answer.headers.get("x-request-id");
      logger.info({ requestId, correlationId: requestId, status: 400 }, "malformed request");
      return answer;
    },
  });
  const server = createServer(
    {
      requireHostHeader: false,
      requestTimeout,
      headersTimeout: requestTimeout,
      keepAliveTimeout: KEEP_ALIVE_MS,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, requestTimeout),
    },
    (request: IncomingMessage, response: ServerResponse) => {
      // Node's own refusal of a missing Host is an empty 400, so it is made here instead.
      if (request.httpVersionMajor === 1 && request.httpVersionMinor === 1 && !request.headers.host) {
        const requestId = randomUUID();
        const body = errorBody(400, "malformed request: HTTP/1.1 requires a Host header");
        response.writeHead(400, { ...errorHeaders(requestId), "content-length": Buffer.byteLength(body) });
        response.end(body);
        logger.info({ requestId, correlationId: requestId, status: 400 }, "malformed request");
        return;
      }
      // What follows is for a body left unread; a request without one (most: gets) has been read
      // to its end by the time its answer is written, and skips it.
      if (hasBody(request)) {
        // An answer with `Connection: close` before the body was read (413): Node would destroy the
        // socket once the answer is written, resetting a client still sending, which can lose the
        // answer; the connection closes gently instead.
        response.once("prefinish", () => {
          // Node's flag: this answer is the connection's last (`Connection: close`).
          const last = (response as ServerResponse & { _last?: boolean })._last;
          if (request.complete || !last) return;
          const socket = request.socket;
          socket.destroySoon = () => closeAnswered(socket);
        });
        response.once("finish", () => drainUnread(request));
      }
      void listener(request, response);
    },
  );
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Once the parser failed, every later chunk of the request fails it again: the connection is
    // already being answered and closed, and destroying it now would reset it under its answer.
    if (closing.has(socket)) return;
    const status = clientErrorStatus(error.code);
    if (status === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = randomUUID();
    const message =
      status === 431
        ? "request header fields too large (at most 16 KiB in all)"
        : status === 408
          ? `request not received in time (headers and body within ${requestTimeout / 1000} s)`
          : `malformed request (${error.code ?? "parse error"})`;
    logger.info({ requestId, correlationId: requestId, status, code: error.code }, "client error");
    const answer = rawHttpResponse(status, message, requestId);
    // A response may be under way on this connection: an earlier request's (pipelined), answered
    // first; or the app's early answer to the request whose body broke, which stays the answer.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    closing.add(socket);
    if (inFlight && (inFlight.req.complete || inFlight.headersSent) && !inFlight.writableFinished) {
      const earlier = inFlight.req.complete;
      inFlight.once("finish", () => closeAnswered(socket, earlier ? answer : undefined));
      return;
    }
    // Otherwise nothing of an answer is on the wire yet (a request whose body broke is still
    // being read by the app, which can no longer answer it).
    closeAnswered(socket, answer);
  });
  return server;
}

/** The request has a body: sent chunked, or with a Content-Length above 0 (HTTP/1.1 framing). */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && Number(length) !== 0);
}

/**
 * After an answer sent before its request's body was read (a 401 or 404 needs no body), reads and
 * drops the rest, so the kept-alive connection carries the client's next request. A client that
 * stops sending for `LINGER_MS` loses the connection; past `MAX_DRAIN_BYTES` too (the uploads'
 * limit), closed gently: a client still sending 200 MB of a refused upload may not have read its
 * 413 yet, and a reset would destroy it unread.
 */
function drainUnread(request: IncomingMessage): void {
  if (request.complete || request.destroyed) return;
  let drained = 0;
  let lastData = Date.now();
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    lastData = Date.now();
    if (drained > MAX_DRAIN_BYTES && !closing.has(request.socket)) closeAnswered(request.socket);
  };
  const check = () => {
    if (request.complete || request.destroyed) return;
    // Data already received is handled first (setImmediate runs after pending I/O): after a busy
    // stretch the timer can fire before the chunks that arrived meanwhile are read.
    setImmediate(() => {
      if (request.complete || request.destroyed) return;
      if (Date.now() - lastData >= LINGER_MS) request.socket.destroy();
      else setTimeout(check, LINGER_MS).unref();
    });
  };
  // As Node's own dump of an unread body: a reader the app left (a web stream nobody reads, which
  // pauses the request when its queue is full) is dropped first.
  request.removeAllListeners("data");
  request.on("data", onData);
  request.resume();
  setTimeout(check, LINGER_MS).unref();
}

function clientErrorStatus(code: string | undefined): number | undefined {
  if (code === "ECONNRESET" || code === "EPIPE") return undefined;
  if (code === "HPE_HEADER_OVERFLOW") return 431;
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return 408;
  return 400;
}

function errorBody(status: number, message: string): string {
  return JSON.stringify({ code: status, type: errorTypeFor(status), message });
}

function errorHeaders(requestId: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "x-request-id": requestId,
    "x-content-type-options": "nosniff",
    connection: "close",
  };
}

/** An error answer the adapter writes like any response of the app. */
function rawError(status: number, message: string): Response {
  return new Response(errorBody(status, message), { status, headers: errorHeaders(randomUUID()) });
}

function rawHttpResponse(status: number, message: string, requestId: string): string {
  const body = errorBody(status, message);
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    "X-Content-Type-Options: nosniff",
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}

/** Connections answered for the last time and closing (see `closeGently`). */
const closing = new WeakSet<Duplex>();

/** Closes the connection after its last answer without losing it (`closeGently`), marked as closing. */
function closeAnswered(socket: Duplex, lastBytes?: string): void {
  closing.add(socket);
  closeGently(socket, lastBytes);
}
